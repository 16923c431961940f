// A torch.export program file (.pt2 from torch.export.save) read without Python: what kind of
// PyTorch archive a file is, and the program's signature (its inputs, their dtypes and shapes,
// which dimensions are dynamic and within which range) from the archive's models/*.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/feed/input_spec.h"
#include "torchperf/feed/length_distribution.h"

namespace torchperf {

enum class ArchiveKind { kTorchScript, kExportedProgram, kAotiPackage, kTorchSave, kOther };

// Reads only the zip's directory; throws ModelError for a file that is not a whole zip archive.
ArchiveKind archive_kind(const std::string& path);

struct ProgramInput {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> sizes;  // the example's sizes (a dynamic one: its hint)
  std::vector<bool> dynamic;        // per dimension
  std::vector<std::string> symbols;  // per dimension: its symbol ("s53"), "" when static
};

// A dynamic dimension's range as the program was exported with it (torch.export.Dim's min and
// max); max 0: no upper bound.
struct SymbolRange {
  std::int64_t min = 1, max = 0;
};

struct ProgramSignature {
  std::vector<ProgramInput> inputs;
  // The batch dimension (dimension 0 of every input) is one dynamic symbol, within [min, max].
  bool dynamic_batch = false;
  std::int64_t batch_min = 1, batch_max = 0;  // 0: no upper bound
  std::int64_t exported_batch = 1;            // the example's batch
  bool convolutional = false;                 // the graph calls aten.convolution / conv2d
  bool linear = false;                        // aten.linear / addmm / mm
  std::string torch_version;                  // the torch that exported it
  std::vector<std::pair<std::string, SymbolRange>> ranges;  // every dynamic symbol's

  // The range of input's dimension dim (counting the batch as 0); nullopt when it is static.
  std::optional<SymbolRange> range_of(std::size_t input, std::size_t dim) const;

  // The spec that feeds it (without the batch dimension): what --input may leave out.
  InputSpec input_spec() const;
  // "x: Float[s0,3,224,224] (s0 in 1..1024)" for messages.
  std::string describe() const;
};

// Throws ModelError naming the file when the program's JSON is missing or not understood.
ProgramSignature read_program_signature(const std::string& path);

// A stream of varying sizes (issue 52) fed to a program: each named dimension of spec must be
// dynamic in the program, and its distribution within the range it was exported with; else
// WorkloadError naming the model, the input, the dimension and what export call would take it.
void check_program_takes(const ProgramSignature& program, const InputSpec& spec,
                         const std::vector<NamedDim>& dims, const std::string& model);

}  // namespace torchperf

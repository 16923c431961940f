// Turns an input spec into tensors (seeded, so every configuration sees the same data), or loads
// real inputs saved from Python with torch.save.
#pragma once

#include <torch/script.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/feed/input_spec.h"
#include "torchperf/feed/length_distribution.h"

namespace torchperf {

c10::ScalarType to_scalar_type(DType dtype);

std::vector<c10::IValue> make_inputs(const InputSpec& spec, std::int64_t batch, std::uint64_t seed);

// A tensor, or a tuple/list of tensors, saved with torch.save. Throws ModelError naming the file.
std::vector<c10::IValue> load_inputs_file(const std::string& path);

// Real samples of sizes that vary (issue 52), e.g. tokenised text: a torch.save list of samples,
// each a tuple of tensors or a dict of forward's argument -> tensor, without the batch dimension.
// The dimensions whose sizes differ between samples are named (S, then S2, ... where they differ
// differently), each with the samples' own sizes as a lengths file replayed in their order.
struct InputSamples {
  InputSpec spec;               // the dtypes, named dimensions, integer ranges; arguments (a dict)
  std::vector<NamedDim> dims;   // one per named dimension
  std::vector<std::vector<at::Tensor>> samples;  // in the file's order, as spec orders them
};
// nullopt when the file holds batched inputs instead (load_inputs_file reads those). Throws
// ModelError naming the file and the sample when samples disagree in their inputs, a rank or a
// dtype.
std::optional<InputSamples> load_input_samples(const std::string& path);
// Whether the file holds samples (load_input_samples) rather than batched inputs: its batch is then
// a knob. Throws as load_input_samples does for a file that is neither.
bool holds_input_samples(const std::string& path);
// The samples in the order of spec's entries after in_forward_order put them in forward's order.
void order_samples(InputSamples& samples, const InputSpec& ordered);

// int8's calibration samples (--calibration FILE): tensors saved with torch.save, batched (the
// samples in the first dimension), as many as the model's inputs, each of its input's dtype and
// sizes but the first and the named (varying) dimensions; `spec` (null: the inputs file's
// `file_inputs`) says what the model is fed. Returns how many samples; throws WorkloadError
// naming the file and the first input that differs, ModelError for a file that is not tensors.
std::int64_t check_calibration_file(const std::string& path, const InputSpec* spec,
                                    const std::vector<c10::IValue>& file_inputs);
// How many samples a calibration file holds (its first tensor's first dimension); 0 where it
// cannot be read now.
std::int64_t calibration_samples(const std::string& path) noexcept;

// Shapes and dtypes of inputs in LibTorch's names, e.g. "Float[8,3,224,224]; Long[8,128]".
std::string describe_inputs(const std::vector<c10::IValue>& inputs);

}  // namespace torchperf

// Built-in models that need no file: defined once, in Python with torch.nn
// (python/torchperf/builtin_models.py), and materialised on first use into torchperf's cache as a
// torch.export program (batch dynamic in 1..kBuiltinMaxBatch: every runtime, AOTInductor and
// torch.compile included) and as TorchScript scripted from the same module with the same weights
// (freezing, int8, lint and train read its graph). This file is their catalogue.
#pragma once

#include <torch/script.h>

#include <string>
#include <vector>

#include "torchperf/feed/input_spec.h"
#include "torchperf/feed/length_distribution.h"

namespace torchperf {

struct BuiltinModelInfo {
  std::string name;  // as written after "builtin:", preset included (e.g. "encoder:bert-base")
  std::string description;
  InputSpec default_inputs;
};

// The largest batch a built-in's program is exported for.
inline constexpr long long kBuiltinMaxBatch = 4096;

const std::vector<BuiltinModelInfo>& builtin_models();
// Throws UsageError naming the known built-ins when the name is unknown.
const BuiltinModelInfo& find_builtin(const std::string& name);

struct BuiltinFiles {
  std::string program;      // model.pt2
  std::string torchscript;  // model.pt
};

// The built-in's files for weights `seed`, exported now (a Python child, a few seconds) unless
// the cache has them: keyed by name, seed, the definition's text and the torch version, written
// whole or not at all, one process at a time per entry.
BuiltinFiles materialise_builtin(const std::string& name, std::uint64_t seed = 0);
// The same with the program fed spec, whose named dimensions vary (issue 52): each exported
// dynamic over its distribution's range (an entry of its own in the cache).
BuiltinFiles materialise_builtin(const std::string& name, std::uint64_t seed, const InputSpec& spec,
                                 const std::vector<NamedDim>& dims);
// Its TorchScript form, loaded (eval mode; parameters require grad, as an nn.Module's do).
torch::jit::Module build_builtin(const std::string& name, std::uint64_t seed = 0);

}  // namespace torchperf

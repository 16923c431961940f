// Built-in models that need no Python and no files, built as TorchScript modules (so graph passes
// such as freezing apply to them) with deterministic random weights.
#pragma once

#include <torch/script.h>

#include <string>
#include <vector>

#include "torchperf/models/input_spec.h"

namespace torchperf {

struct BuiltinModelInfo {
  std::string name;  // as written after "builtin:", preset included (e.g. "encoder:bert-base")
  std::string description;
  InputSpec default_inputs;
};

const std::vector<BuiltinModelInfo>& builtin_models();
// Throws UsageError naming the known built-ins when the name is unknown.
const BuiltinModelInfo& find_builtin(const std::string& name);
torch::jit::Module build_builtin(const std::string& name, std::uint64_t seed = 0);

}  // namespace torchperf

// The lint rules: a TorchScript model's forward, inlined (each node keeps the module path and the
// source line TorchScript recorded), read for performance anti-patterns the guides list, and the
// process's environment read for debugging switches left on.
#pragma once

#include <string>
#include <vector>

#include "torchperf/lint/finding.h"

namespace torch::jit {
struct Module;
}

namespace torchperf {

struct LintContext {
  bool saved_training = false;        // the model's training flag as loaded
  std::vector<std::string> cpu_isa;   // what the CPU has (measure/environment.h)
  bool cuda = false;                  // the model is meant for a CUDA device
};

// The channel multiple the hardware wants, with the reason in words: 8 for fp16/bf16 tensor
// cores and AVX2 (8 floats), 16 where oneDNN blocks channels by 16 (AVX-512).
struct SizeMultiple {
  int multiple = 8;
  std::string evidence;
};
SizeMultiple preferred_multiple(const LintContext& context);

// Throws ModelError when the module has no forward method to read.
std::vector<Finding> lint_module(const torch::jit::Module& module, const LintContext& context);

// Debugging switches in this process and its environment that slow every call.
std::vector<Finding> lint_process();

}  // namespace torchperf

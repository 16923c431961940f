// int8 dynamic quantization of a TorchScript model's Linear layers, through LibTorch's quantized
// operators: weights quantized per output channel (symmetric int8, PyTorch's
// per_channel_dynamic_qconfig), activations quantized per batch inside quantized::linear_dynamic.
#pragma once

#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace torchperf {

struct QuantizedLayers {
  int linear = 0;                    // aten::linear calls that now run quantized::linear_dynamic
  std::vector<std::string> skipped;  // linear calls left in fp32, and why
};

// Rewrites every aten::linear whose weight is a 2-D floating attribute of its module, in every
// method of every submodule, packing the weights for the quantized engine in use now (the
// qengine knob sets it first). The module's methods must not have run yet: their executors keep
// the graph they first saw (quantize a fresh clone). Throws ConfigError when nothing was
// quantized, naming why.
QuantizedLayers quantize_linear_dynamic(torch::jit::Module& module);

}  // namespace torchperf

// int8 dynamic quantization of a TorchScript model's Linear, LSTM and GRU layers, through
// LibTorch's quantized operators: weights quantized per output channel (symmetric int8, PyTorch's
// per_channel_dynamic_qconfig), activations quantized per batch inside the quantized operators.
#pragma once

#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace torchperf {

struct QuantizedLayers {
  int linear = 0;                    // aten::linear calls that now run quantized::linear_dynamic
  int recurrent = 0;                 // aten::lstm/gru calls that now run aten::quantized_lstm/gru
  std::vector<std::string> skipped;  // linear calls left in fp32, and why
};

// Rewrites every aten::linear whose weight is a 2-D floating attribute of its module, and every
// aten::lstm/gru that reads its module's weight list (nn.LSTM, nn.GRU), in every method of every
// submodule, packing the weights for the quantized engine in use now (the
// qengine knob sets it first). The module's methods must not have run yet: their executors keep
// the graph they first saw (quantize a fresh clone). Throws ConfigError when nothing was
// quantized, naming why.
QuantizedLayers quantize_linear_dynamic(torch::jit::Module& module);

}  // namespace torchperf

// Rewrites of a TorchScript model that keep what it computes, and the graph reading they share
// with `lint`: the constant or module attribute a value holds, the conv bias that a batch norm
// right after cancels (folded into the norm's running mean), hidden Linear sizes padded with zeros.
#pragma once

#include <torch/csrc/jit/ir/ir.h>
#include <torch/script.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace torchperf {

// The value a graph value holds when it is a constant or a chain of attribute reads from the
// module the graph belongs to (self.conv1.weight); none otherwise.
c10::optional<c10::IValue> known_value(const torch::jit::Value* value,
                                       const torch::jit::Module& module);

// Visits every node of a block, nested blocks included, in order.
void for_each_node(torch::jit::Block* block, const std::function<void(torch::jit::Node*)>& visit);

// aten::_convolution, conv1d/2d/3d or convolution (weight input 1, bias input 2).
bool is_convolution(const torch::jit::Node* node);

// A convolution with a bias whose only use is the input of a batch norm.
bool is_conv_bias_before_batch_norm(const torch::jit::Node* node);

// How many such convolutions forward has (after inlining).
int count_conv_bias_before_batch_norm(const torch::jit::Module& module);

// Inlines forward and, at each such convolution whose bias and running mean are module
// attributes used nowhere else, subtracts the bias from the running mean and drops the bias:
// batch_norm(conv(x) + b, mean) = batch_norm(conv(x), mean - b), exactly in eval mode, and in
// training mode the batch mean absorbs b. Returns the number folded. Call it on a module that
// has not run yet (a fresh clone): executors keep the graph they first saw.
int fold_conv_bias_into_batch_norm(torch::jit::Module& module);

// A hidden size between two Linear layers: the producer's output features reach the consumer's
// input, through per-element ops only (activations, dropout), and nowhere else. Padding it with
// zero rows in the producer (and its bias) and zero columns in the consumer leaves the output as
// it was: whatever the padded features hold, the consumer multiplies them by zero.
struct HiddenLinearSize {
  torch::jit::Node* producer = nullptr;  // aten::linear
  torch::jit::Node* consumer = nullptr;  // aten::linear
  std::int64_t size = 0;
};

// Such sizes in an inlined graph of the module, whose weights are module attributes (and not
// shared with another layer).
std::vector<HiddenLinearSize> hidden_linear_sizes(torch::jit::Graph& graph,
                                                  const torch::jit::Module& module);

// The same, read from forward (a copy, inlined): the sizes only.
std::vector<std::int64_t> hidden_linear_sizes(const torch::jit::Module& module);

// Pads each hidden size that is not a multiple of `multiple` up to the next one, in the module's
// own weights (forward's graph is not changed). Returns the number padded.
int pad_hidden_linear_sizes(torch::jit::Module& module, std::int64_t multiple);

}  // namespace torchperf

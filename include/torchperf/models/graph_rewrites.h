// Rewrites of a TorchScript model's graph that keep what it computes, and the graph reading they
// share with `lint`: the constant or module attribute a value holds, and the conv bias that a
// batch norm right after cancels (folded into the norm's running mean).
#pragma once

#include <torch/csrc/jit/ir/ir.h>
#include <torch/script.h>

#include <functional>

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

}  // namespace torchperf

#include "torchperf/models/flop_counter.h"

#include <ATen/record_function.h>
#include <torch/csrc/profiler/util.h>

#include "torchperf/error.h"

namespace torchperf {
namespace {

thread_local FlopCount* active_count = nullptr;

// LibTorch 1.13's conv2d formula needs stride/padding/dilation as two-element lists, but its
// argument capture sometimes omits them and single-element lists (valid: they broadcast) are
// rejected. Both are repaired from the call's own inputs; a conv that still lacks them is skipped.
bool complete_conv2d_args(const at::RecordFunction& fn,
                          std::unordered_map<std::string, c10::IValue>& args) {
  const auto inputs = fn.inputs();
  const char* keys[] = {"stride", "padding", "dilation"};
  for (int i = 0; i < 3; ++i) {
    auto it = args.find(keys[i]);
    c10::IValue value = it != args.end()                                  ? it->second
                        : inputs.size() > static_cast<std::size_t>(3 + i) ? inputs[3 + i]
                                                                          : c10::IValue();
    if (!value.isIntList()) return false;  // e.g. padding='same': no formula here
    auto v = value.toIntVector();
    if (v.size() == 1) v.push_back(v[0]);
    if (v.size() != 2) return false;
    args[keys[i]] = c10::IValue(v);
  }
  if (!args.count("groups")) {
    if (inputs.size() <= 6 || !inputs[6].isInt()) return false;
    args["groups"] = inputs[6];
  }
  return args.count("input_size") && args.count("weight_size");
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  if (!active_count) return nullptr;
  auto args = torch::profiler::impl::saveExtraArgs(fn);
  if (args.empty()) return nullptr;
  const std::string name = fn.name();
  if (name == "aten::conv2d" && !complete_conv2d_args(fn, args)) return nullptr;
  const std::uint64_t flops = torch::profiler::impl::computeFlops(name, args);
  if (flops > 0) {
    active_count->flops += flops;
    ++active_count->counted_ops;
  }
  return nullptr;
}

}  // namespace

FlopCount count_flops(const std::function<void()>& work) {
  FlopCount count;
  active_count = &count;
  const auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_enter).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
  try {
    work();
  } catch (...) {
    at::removeCallback(handle);
    active_count = nullptr;
    throw;
  }
  at::removeCallback(handle);
  active_count = nullptr;
  return count;
}

}  // namespace torchperf

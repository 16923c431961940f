// FLOPs of a piece of work, from LibTorch's own estimates (the profiler's saveExtraArgs and
// computeFlops: convolutions, matmul family, elementwise add/mul), collected with a RecordFunction
// observer while the work runs once.
#pragma once

#include <cstdint>
#include <functional>

namespace torchperf {

struct FlopCount {
  std::uint64_t flops = 0;
  std::uint64_t counted_ops = 0;  // operator calls that had a FLOP formula
};

FlopCount count_flops(const std::function<void()>& work);

}  // namespace torchperf

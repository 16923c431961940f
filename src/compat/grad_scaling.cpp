#include "torchperf/compat/grad_scaling.h"

#include <ATen/ATen.h>
#include <ATen/Config.h>
#include <torch/version.h>

#if AT_PARALLEL_OPENMP
#include <omp.h>
#endif

namespace torchperf::compat {
namespace {

constexpr bool kCpuKernels =
    TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3);

bool fused_kernels_for(const at::Tensor& t) { return t.is_cuda() || kCpuKernels; }

}  // namespace

void unscale_and_check(std::vector<at::Tensor>& grads, at::Tensor& found_inf,
                       const at::Tensor& inv_scale) {
  if (grads.empty()) return;
  if (fused_kernels_for(grads.front())) {
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
    return;
  }
  // The kernel's contract: every gradient multiplied, found_inf set (never cleared) on Inf/NaN.
  for (auto& g : grads) {
    if (!g.defined()) continue;
    if (!at::isfinite(g).all().item<bool>()) found_inf.fill_(1.0);
    g.mul_(inv_scale);
  }
}

void update_scale(at::Tensor& scale, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                  double growth_factor, double backoff_factor, std::int64_t interval) {
  if (fused_kernels_for(scale)) {
    at::_amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                           interval);
    return;
  }
  if (found_inf.item<float>() > 0) {
    scale.mul_(backoff_factor);
    growth_tracker.zero_();
    return;
  }
  const auto clean = growth_tracker.item<int>() + 1;
  if (clean == interval) {
    const double grown = scale.item<double>() * growth_factor;
    if (std::isfinite(static_cast<float>(grown))) scale.fill_(grown);  // as the kernel: no Inf
    growth_tracker.zero_();
  } else {
    growth_tracker.fill_(clean);
  }
}

void use_one_intra_op_thread_in_this_thread() {
#if AT_PARALLEL_OPENMP
  // OpenMP keeps the thread count per thread: this changes this thread's teams only.
  omp_set_num_threads(1);
#endif
  // The native and TBB backends share one pool; their kernels called from a thread that is not
  // in it queue work to that pool, which is what PyTorch's threads do too.
}

}  // namespace torchperf::compat

#include "torchperf/compat/grad_scaling.h"

#include <ATen/ATen.h>
#include <ATen/Config.h>

#if AT_PARALLEL_OPENMP
#include <omp.h>
#endif

namespace torchperf::compat {

void unscale_and_check(std::vector<at::Tensor>& grads, at::Tensor& found_inf,
                       const at::Tensor& inv_scale) {
  if (grads.empty()) return;
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
}

void update_scale(at::Tensor& scale, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                  double growth_factor, double backoff_factor, std::int64_t interval) {
  at::_amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                         interval);
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

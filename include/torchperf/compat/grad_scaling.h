// The two ATen kernels a gradient scaler is built on, and the per-thread thread limit of loader
// threads. LibTorch's C++ API has no GradScaler; its kernels run on CUDA and, in every LibTorch
// torchperf supports (>= 2.11), on the CPU.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace torchperf::compat {

// Multiplies every gradient by inv_scale in place and sets found_inf (a 1-element float tensor)
// to 1 when any gradient holds an Inf or a NaN (at::_amp_foreach_non_finite_check_and_unscale_).
void unscale_and_check(std::vector<at::Tensor>& grads, at::Tensor& found_inf,
                       const at::Tensor& inv_scale);
// Backs the scale off after a step with Infs, grows it after `interval` clean steps in a row
// (at::_amp_update_scale_).
void update_scale(at::Tensor& scale, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                  double growth_factor, double backoff_factor, std::int64_t interval);

// Makes ATen kernels called from this thread run on this thread alone (a loader thread, like
// PyTorch's DataLoader workers, which call torch.set_num_threads(1)), leaving the training
// thread's intra-op threads as they are.
void use_one_intra_op_thread_in_this_thread();

}  // namespace torchperf::compat

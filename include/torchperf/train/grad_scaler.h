// Gradient scaling for fp16 mixed precision, as torch.cuda.amp.GradScaler does it (LibTorch's
// C++ API has none): the loss is multiplied by a scale before backward, gradients are unscaled and
// checked, a step with an Inf or NaN gradient is skipped and the scale backs off.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace torch::optim {
class Optimizer;
}

namespace torchperf {

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  at::Tensor scale(const at::Tensor& loss);
  // Unscales the gradients of `parameters` and steps the optimizer unless a gradient is not
  // finite; returns whether it stepped. Then updates the scale.
  bool step(torch::optim::Optimizer& optimizer, const std::vector<at::Tensor>& parameters);
  double current_scale() const;
  std::int64_t skipped_steps() const { return skipped_; }

 private:
  void lazy_init(const at::Device& device);

  GradScalerOptions options_;
  at::Tensor scale_, growth_tracker_;
  std::int64_t skipped_ = 0;
};

}  // namespace torchperf

#include "torchperf/train/grad_scaler.h"

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include "torchperf/compat/grad_scaling.h"

namespace torchperf {

GradScaler::GradScaler(GradScalerOptions options) : options_(options) {}

void GradScaler::lazy_init(const at::Device& device) {
  if (scale_.defined()) return;
  scale_ = at::full({1}, options_.init_scale, at::TensorOptions().dtype(at::kFloat).device(device));
  growth_tracker_ = at::zeros({1}, at::TensorOptions().dtype(at::kInt).device(device));
}

at::Tensor GradScaler::scale(const at::Tensor& loss) {
  lazy_init(loss.device());
  return loss * scale_.to(loss.scalar_type());
}

bool GradScaler::step(torch::optim::Optimizer& optimizer,
                      const std::vector<at::Tensor>& parameters) {
  std::vector<at::Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) {
    optimizer.step();
    return true;
  }
  lazy_init(grads.front().device());
  at::Tensor found_inf = at::zeros({1}, scale_.options());
  const at::Tensor inv_scale = scale_.reciprocal();
  compat::unscale_and_check(grads, found_inf, inv_scale);
  const bool finite = found_inf.item<float>() == 0.0f;
  if (finite)
    optimizer.step();
  else
    ++skipped_;
  compat::update_scale(scale_, growth_tracker_, found_inf, options_.growth_factor,
                       options_.backoff_factor, options_.growth_interval);
  return finite;
}

double GradScaler::current_scale() const {
  return scale_.defined() ? scale_.item<double>() : options_.init_scale;
}

}  // namespace torchperf

#include "torchperf/models/accuracy.h"

#include <algorithm>
#include <cmath>

namespace torchperf {
namespace {

void collect(const c10::IValue& value, std::vector<at::Tensor>& out) {
  if (value.isTensor()) {
    out.push_back(value.toTensor());
  } else if (value.isTuple()) {
    for (const auto& v : value.toTupleRef().elements()) collect(v, out);
  } else if (value.isList()) {
    for (const auto& v : value.toListRef()) collect(v, out);
  } else if (value.isGenericDict()) {
    for (const auto& entry : value.toGenericDict()) collect(entry.value(), out);
  }
}

bool is_floating_tensor(const at::Tensor& t) { return at::isFloatingType(t.scalar_type()); }

}  // namespace

std::vector<at::Tensor> flatten_output(const c10::IValue& output) {
  std::vector<at::Tensor> out;
  collect(output, out);
  return out;
}

std::int64_t count_nonfinite(const std::vector<at::Tensor>& outputs) {
  std::int64_t count = 0;
  for (const auto& t : outputs)
    if (is_floating_tensor(t)) count += (~at::isfinite(t)).sum().item<std::int64_t>();
  return count;
}

Accuracy compare_outputs(const std::vector<at::Tensor>& reference,
                         const std::vector<at::Tensor>& candidate) {
  Accuracy acc;
  acc.nonfinite_values = count_nonfinite(candidate);
  if (reference.size() != candidate.size()) {
    acc.comparable = false;
    acc.note = "output has " + std::to_string(candidate.size()) + " tensors, reference has " +
               std::to_string(reference.size());
    return acc;
  }
  double dot = 0, norm_ref = 0, norm_cand = 0, max_ref = 0;
  std::int64_t agree = 0, rows = 0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const at::Tensor ref = reference[i].detach().to(at::kCPU).to(at::kDouble).contiguous();
    const at::Tensor cand = candidate[i].detach().to(at::kCPU).to(at::kDouble).contiguous();
    if (ref.sizes() != cand.sizes()) {
      acc.comparable = false;
      acc.note = "output " + std::to_string(i) + " has shape " + c10::str(cand.sizes()) +
                 ", reference has " + c10::str(ref.sizes());
      return acc;
    }
    if (ref.numel() == 0) continue;
    const at::Tensor finite = at::isfinite(cand);
    const at::Tensor c = at::where(finite, cand, at::zeros_like(cand));
    acc.max_abs_error = std::max(acc.max_abs_error, (c - ref).abs().max().item<double>());
    max_ref = std::max(max_ref, ref.abs().max().item<double>());
    dot += (c * ref).sum().item<double>();
    norm_ref += (ref * ref).sum().item<double>();
    norm_cand += (c * c).sum().item<double>();
    if (ref.dim() == 2 && ref.size(1) > 1 && is_floating_tensor(reference[i])) {
      agree += (ref.argmax(1) == c.argmax(1)).sum().item<std::int64_t>();
      rows += ref.size(0);
    }
  }
  acc.max_rel_error = max_ref > 0 ? acc.max_abs_error / max_ref : acc.max_abs_error;
  if (norm_ref > 0 && norm_cand > 0)
    acc.cosine = dot / (std::sqrt(norm_ref) * std::sqrt(norm_cand));
  else
    acc.cosine = (norm_ref == norm_cand) ? 1 : 0;
  if (acc.nonfinite_values > 0) acc.cosine = std::nan("");
  if (rows > 0) acc.top1_agreement = static_cast<double>(agree) / static_cast<double>(rows);
  return acc;
}

}  // namespace torchperf

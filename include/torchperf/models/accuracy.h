// How far a configuration's output is from the fp32 reference: error magnitudes, cosine similarity,
// top-1 agreement for logits, and non-finite values (NaN/Inf), which make a result invalid.
#pragma once

#include <torch/script.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace torchperf {

// Every tensor in a forward result, in order: a tensor, or tuples/lists/dicts of them, nested.
std::vector<at::Tensor> flatten_output(const c10::IValue& output);

struct Accuracy {
  bool comparable = true;  // false when shapes or tensor counts differ from the reference
  std::string note;        // why not comparable
  double max_abs_error = 0;
  double max_rel_error = 0;  // max |a-b| / max |reference|
  double cosine = 1;
  std::optional<double> top1_agreement;  // for [batch, classes] outputs
  std::int64_t nonfinite_values = 0;     // NaN or Inf in the candidate
};

Accuracy compare_outputs(const std::vector<at::Tensor>& reference,
                         const std::vector<at::Tensor>& candidate);

// Counts NaN/Inf in outputs (used for the reference itself too).
std::int64_t count_nonfinite(const std::vector<at::Tensor>& outputs);

}  // namespace torchperf

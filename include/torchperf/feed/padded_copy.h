// The one padder of the project's batches: a sample written at the start of a larger region of
// zeros. A stream's batches (shape_stream) and serve's merged requests (torch_model_runner) both
// place their samples with it.
#pragma once

#include <ATen/ATen.h>

namespace torchperf {

// `sample` written at the start of `region`, a tensor at least as large in every dimension; the
// rest of the region is left as it is (padding's zeros).
void copy_padded(at::Tensor region, const at::Tensor& sample);

}  // namespace torchperf

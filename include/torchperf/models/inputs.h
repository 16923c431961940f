// Turns an input spec into tensors (seeded, so every configuration sees the same data), or loads
// real inputs saved from Python with torch.save.
#pragma once

#include <torch/script.h>

#include <cstdint>
#include <string>
#include <vector>

#include "torchperf/models/input_spec.h"

namespace torchperf {

c10::ScalarType to_scalar_type(DType dtype);

std::vector<c10::IValue> make_inputs(const InputSpec& spec, std::int64_t batch, std::uint64_t seed);

// A tensor, or a tuple/list of tensors, saved with torch.save. Throws ModelError naming the file.
std::vector<c10::IValue> load_inputs_file(const std::string& path);

// Shapes and dtypes of inputs in LibTorch's names, e.g. "Float[8,3,224,224]; Long[8,128]".
std::string describe_inputs(const std::vector<c10::IValue>& inputs);

}  // namespace torchperf

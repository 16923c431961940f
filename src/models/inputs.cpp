#include "torchperf/models/inputs.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "torchperf/compat/torch_error.h"
#include "torchperf/error.h"

namespace torchperf {

c10::ScalarType to_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return at::kFloat;
    case DType::kFloat16:
      return at::kHalf;
    case DType::kBFloat16:
      return at::kBFloat16;
    case DType::kFloat64:
      return at::kDouble;
    case DType::kInt64:
      return at::kLong;
    case DType::kInt32:
      return at::kInt;
    case DType::kUInt8:
      return at::kByte;
    case DType::kBool:
      return at::kBool;
  }
  return at::kFloat;
}

std::vector<c10::IValue> make_inputs(const InputSpec& spec, std::int64_t batch,
                                     std::uint64_t seed) {
  if (batch <= 0)
    throw UsageError("batch: expected a positive integer, got " + std::to_string(batch));
  // A named dimension has no one size: the stream (shape_stream.h) sizes it per sample.
  if (!spec.named_dims().empty()) with_sizes(spec, {});
  at::Generator gen = at::detail::createCPUGenerator(seed);
  std::vector<c10::IValue> inputs;
  for (const auto& t : spec.tensors) {
    std::vector<std::int64_t> shape{batch};
    shape.insert(shape.end(), t.shape.begin(), t.shape.end());
    at::Tensor tensor;
    if (is_floating(t.dtype)) {
      tensor = t.has_range ? at::empty(shape).uniform_(t.low, t.high, gen) : at::randn(shape, gen);
      tensor = tensor.to(to_scalar_type(t.dtype));
    } else {
      const double low = t.has_range ? t.low : 0;
      const double high = t.has_range ? t.high : 2;
      tensor = at::randint(static_cast<std::int64_t>(low), static_cast<std::int64_t>(high), shape,
                           gen, at::TensorOptions().dtype(to_scalar_type(t.dtype)));
    }
    inputs.emplace_back(tensor);
  }
  return inputs;
}

std::vector<c10::IValue> load_inputs_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw ModelError("inputs file '" + path + "': no such file");
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  c10::IValue value;
  try {
    value = torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    throw ModelError("inputs file '" + path + "': not a torch.save file of tensors (" +
                     compat::concise_error_message(e.what()) + ")");
  }
  std::vector<c10::IValue> inputs;
  if (value.isTensor()) {
    inputs.push_back(value);
  } else if (value.isTuple()) {
    for (const auto& v : value.toTupleRef().elements()) inputs.push_back(v);
  } else if (value.isList()) {
    for (const auto& v : value.toListRef()) inputs.push_back(v);
  } else {
    throw ModelError("inputs file '" + path +
                     "': expected a tensor or a tuple/list of tensors, got " + value.tagKind());
  }
  for (const auto& v : inputs)
    if (!v.isTensor())
      throw ModelError("inputs file '" + path + "': expected every input to be a tensor, got " +
                       v.tagKind());
  if (inputs.empty()) throw ModelError("inputs file '" + path + "': holds no tensors");
  return inputs;
}

std::string describe_inputs(const std::vector<c10::IValue>& inputs) {
  std::string out;
  for (const auto& v : inputs) {
    if (!out.empty()) out += "; ";
    if (!v.isTensor()) {
      out += v.tagKind();
      continue;
    }
    const auto& t = v.toTensor();
    out += std::string(c10::toString(t.scalar_type())) + "[";
    for (std::int64_t i = 0; i < t.dim(); ++i) out += (i ? "," : "") + std::to_string(t.size(i));
    out += "]";
  }
  return out;
}

}  // namespace torchperf

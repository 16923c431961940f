#include "torchperf/feed/inputs.h"

#include <fmt/format.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize.h>

#include <algorithm>
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

namespace {

c10::IValue read_pickle_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw ModelError("inputs file '" + path + "': no such file");
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    throw ModelError("inputs file '" + path + "': not a torch.save file of tensors (" +
                     compat::concise_error_message(e.what()) + ")");
  }
}

std::optional<DType> dtype_of(at::ScalarType type) {
  for (const DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
                        DType::kInt64, DType::kInt32, DType::kUInt8, DType::kBool})
    if (to_scalar_type(d) == type) return d;
  return std::nullopt;
}

std::string shape_text(const at::Tensor& t) {
  std::string out = std::string(c10::toString(t.scalar_type())) + "[";
  for (std::int64_t d = 0; d < t.dim(); ++d) out += (d ? "," : "") + std::to_string(t.size(d));
  return out + "]";
}

// One sample: its tensors, and the argument names when it is a dict ("" otherwise).
std::vector<std::pair<std::string, at::Tensor>> sample_entries(const c10::IValue& sample,
                                                               const std::string& path,
                                                               std::size_t index) {
  std::vector<std::pair<std::string, c10::IValue>> raw;
  if (sample.isGenericDict()) {
    for (const auto& item : sample.toGenericDict()) {
      if (!item.key().isString())
        throw ModelError("inputs file '" + path + "': sample " + std::to_string(index) +
                         " is a dict whose keys are not forward's argument names (strings)");
      raw.emplace_back(item.key().toStringRef(), item.value());
    }
  } else if (sample.isTuple()) {
    for (const auto& v : sample.toTupleRef().elements()) raw.emplace_back("", v);
  } else if (sample.isList()) {
    for (const auto& v : sample.toListRef()) raw.emplace_back("", v);
  } else {
    raw.emplace_back("", sample);
  }
  std::vector<std::pair<std::string, at::Tensor>> entries;
  for (const auto& [name, v] : raw) {
    if (!v.isTensor())
      throw ModelError("inputs file '" + path + "': sample " + std::to_string(index) +
                       " holds a " + v.tagKind() + "; expected tensors");
    entries.emplace_back(name, v.toTensor());
  }
  return entries;
}

}  // namespace

std::optional<InputSamples> load_input_samples(const std::string& path) {
  const c10::IValue value = read_pickle_file(path);
  if (!value.isList() || value.toListRef().empty()) return std::nullopt;
  const auto& list = value.toListRef();
  const auto& first_value = list.front();
  if (!first_value.isTuple() && !first_value.isGenericDict() && !first_value.isList())
    return std::nullopt;  // a list of tensors: batched inputs, one per argument
  InputSamples out;
  const auto first = sample_entries(first_value, path, 0);
  if (first.empty()) throw ModelError("inputs file '" + path + "': sample 0 holds no tensors");
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto entries = i == 0 ? first : sample_entries(list[i], path, i);
    const auto disagree = [&](const std::string& what) {
      std::string mine, theirs;
      for (const auto& e : entries) mine += (mine.empty() ? "" : ", ") + e.first + (e.first.empty() ? "" : " ") + shape_text(e.second);
      for (const auto& e : first) theirs += (theirs.empty() ? "" : ", ") + e.first + (e.first.empty() ? "" : " ") + shape_text(e.second);
      return ModelError("inputs file '" + path + "': sample " + std::to_string(i) + " (" + mine +
                        ") and sample 0 (" + theirs + ") differ in " + what +
                        "; every sample has the same inputs, ranks and dtypes (sizes may differ)");
    };
    if (entries.size() != first.size()) throw disagree("their number of inputs");
    std::vector<at::Tensor> sample;
    for (std::size_t t = 0; t < first.size(); ++t) {
      if (entries[t].first != first[t].first) throw disagree("their argument names");
      const at::Tensor& x = entries[t].second;
      if (x.dim() != first[t].second.dim()) throw disagree("the rank of input " + std::to_string(t));
      if (x.scalar_type() != first[t].second.scalar_type())
        throw disagree("the dtype of input " + std::to_string(t));
      sample.push_back(x.detach().contiguous());
    }
    out.samples.push_back(std::move(sample));
  }
  // The dimensions that vary, grouped by their sizes across the samples: a mask of the ids'
  // length shares their name.
  std::vector<std::pair<std::vector<std::int64_t>, std::string>> groups;
  for (std::size_t t = 0; t < first.size(); ++t) {
    const at::Tensor& x = first[t].second;
    TensorSpec spec;
    spec.argument = first[t].first;
    const auto dtype = dtype_of(x.scalar_type());
    if (!dtype)
      throw ModelError("inputs file '" + path + "': input " + std::to_string(t) + " is " +
                       std::string(c10::toString(x.scalar_type())) + ", a dtype torchperf cannot feed");
    spec.dtype = *dtype;
    for (std::int64_t d = 0; d < x.dim(); ++d) {
      std::vector<std::int64_t> sizes;
      for (const auto& s : out.samples) sizes.push_back(s[t].size(d));
      const bool varies = std::any_of(sizes.begin(), sizes.end(),
                                      [&](std::int64_t v) { return v != sizes.front(); });
      spec.shape.push_back(varies ? 0 : sizes.front());
      std::string name;
      if (varies) {
        auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& p) { return p.first == sizes; });
        if (g == groups.end()) {
          name = groups.empty() ? "S" : "S" + std::to_string(groups.size() + 1);
          groups.emplace_back(sizes, name);
          NamedDim dim;
          dim.name = name;
          dim.distribution.kind = LengthDistribution::Kind::kFile;
          dim.distribution.lengths = sizes;
          dim.distribution.min = *std::min_element(sizes.begin(), sizes.end());
          dim.distribution.max = *std::max_element(sizes.begin(), sizes.end());
          dim.distribution.text = "samples:" + path;
          out.dims.push_back(dim);
        } else {
          name = g->second;
        }
      }
      spec.dim_names.push_back(name);
    }
    if (!is_floating(spec.dtype) && spec.dtype != DType::kBool) {
      // The values the samples hold, as a range: what a drawn input of this spec may hold.
      for (std::size_t i = 0; i < out.samples.size(); ++i) {
        const at::Tensor& v = out.samples[i][t];
        if (v.numel() == 0) continue;
        const double lo = v.min().item<double>(), hi = v.max().item<double>() + 1;
        spec.low = spec.has_range ? std::min(spec.low, lo) : lo;
        spec.high = spec.has_range ? std::max(spec.high, hi) : hi;
        spec.has_range = true;
      }
    }
    out.spec.tensors.push_back(spec);
  }
  return out;
}

bool holds_input_samples(const std::string& path) {
  return load_input_samples(path).has_value();
}

void order_samples(InputSamples& samples, const InputSpec& ordered) {
  std::vector<std::size_t> at;
  for (const auto& t : ordered.tensors)
    for (std::size_t i = 0; i < samples.spec.tensors.size(); ++i)
      if (samples.spec.tensors[i].argument == t.argument) at.push_back(i);
  for (auto& s : samples.samples) {
    std::vector<at::Tensor> sample;
    for (auto i : at) sample.push_back(s[i]);
    s = std::move(sample);
  }
  samples.spec = ordered;
}

std::vector<c10::IValue> load_inputs_file(const std::string& path) {
  const c10::IValue value = read_pickle_file(path);
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

std::int64_t check_calibration_file(const std::string& path, const InputSpec* spec,
                                    const std::vector<c10::IValue>& file_inputs) {
  std::vector<c10::IValue> samples;
  try {
    samples = load_inputs_file(path);
  } catch (const ModelError& e) {  // its message names an inputs file: this one is --calibration's
    std::string why = e.what();
    const auto cut = why.find("': ");
    throw ModelError("--calibration '" + path + "': " +
                     (cut == std::string::npos ? why : why.substr(cut + 3)));
  }
  // What each input is fed as: the spec's dtype and sizes (0: a named dimension, any size), or
  // the inputs file's tensors' sizes but their batch.
  std::vector<std::pair<at::ScalarType, std::vector<std::int64_t>>> fed;
  std::string expected;
  if (spec) {
    for (const auto& t : spec->tensors) fed.emplace_back(to_scalar_type(t.dtype), t.shape);
    expected = to_string(*spec) + " (the batch first)";
  } else {
    for (const auto& v : file_inputs) {
      const auto& t = v.toTensor();
      fed.emplace_back(t.scalar_type(), std::vector<std::int64_t>(t.sizes().begin() + (t.dim() > 0),
                                                                  t.sizes().end()));
    }
    expected = describe_inputs(file_inputs);
  }
  const auto refuse = [&](const std::string& what) {
    throw WorkloadError("--calibration '" + path + "': " + what + "; the model is fed " +
                        expected + ": save real samples of those inputs, batched (torch.save of "
                        "a tuple of tensors, the samples first)");
  };
  if (samples.size() != fed.size())
    refuse(std::to_string(samples.size()) + " tensor(s) (" + describe_inputs(samples) + ")");
  std::int64_t count = -1;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& x = samples[i].toTensor();
    const auto& [dtype, sizes] = fed[i];
    if (x.scalar_type() != dtype)
      refuse(fmt::format("input {} is of dtype {} ({}), where the model takes {}", i,
                         c10::toString(x.scalar_type()), describe_inputs({samples[i]}),
                         c10::toString(dtype)));
    bool fits = x.dim() == static_cast<std::int64_t>(sizes.size()) + 1;
    for (std::size_t d = 0; fits && d < sizes.size(); ++d)
      fits = sizes[d] == 0 || x.size(static_cast<std::int64_t>(d) + 1) == sizes[d];
    if (!fits) refuse("input " + std::to_string(i) + " is " + describe_inputs({samples[i]}));
    if (count >= 0 && x.size(0) != count)
      refuse("its inputs hold different numbers of samples (" + describe_inputs(samples) + ")");
    count = x.size(0);
  }
  if (count == 0) refuse("it holds 0 samples (" + describe_inputs(samples) + ")");
  return count;
}

std::int64_t calibration_samples(const std::string& path) noexcept {
  try {
    const std::vector<c10::IValue> inputs = load_inputs_file(path);
    const at::Tensor& first = inputs.front().toTensor();
    return first.dim() > 0 ? first.size(0) : 0;
  } catch (...) {
    return 0;
  }
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

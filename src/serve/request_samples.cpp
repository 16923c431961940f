#include "torchperf/serve/request_samples.h"

#include <fmt/format.h>

#include <algorithm>

#include "torch_wire.h"
#include "torchperf/error.h"
#include "torchperf/feed/inputs.h"

namespace torchperf {
namespace {

bool floating(WireType t) {
  return t == WireType::kFp16 || t == WireType::kBf16 || t == WireType::kFp32 ||
         t == WireType::kFp64;
}

WireTensor wire_tensor(const at::Tensor& sample, const WireTensorSpec& input,
                       const std::string& path, std::size_t index) {
  const WireType given = wire_type_of(sample.scalar_type(), "input '" + input.name + "'");
  if (floating(given) != floating(input.type))
    throw UsageError(fmt::format(
        "--inputs-file '{}': sample {}'s input '{}' is {}, where the server takes {}", path,
        index, input.name, to_string(given), to_string(input.type)));
  at::Tensor t = sample.unsqueeze(0).to(torch_type(input.type)).contiguous();  // a batch of 1
  WireTensor w;
  w.name = input.name;
  w.type = input.type;
  w.shape.assign(t.sizes().begin(), t.sizes().end());
  const auto* bytes = static_cast<const std::uint8_t*>(t.data_ptr());
  w.bytes.assign(bytes, bytes + t.nbytes());
  return w;
}

}  // namespace

std::vector<RequestSample> request_samples(const std::string& path,
                                           const std::vector<WireTensorSpec>& inputs) {
  std::optional<InputSamples> read;
  try {
    read = load_input_samples(path);
  } catch (const Error& e) {
    throw UsageError(fmt::format("--inputs-file: {}", e.what()));
  }
  if (!read)
    throw UsageError(fmt::format(
        "--inputs-file '{}' holds batched inputs, not samples: expected a torch.save list of "
        "samples, each a tuple of tensors or a dict of forward's argument -> tensor, without the "
        "batch dimension (docs/shapes.md, real samples)",
        path));
  const InputSamples& s = *read;
  if (s.samples.empty()) throw UsageError(fmt::format("--inputs-file '{}' holds no sample", path));
  // Where each of the file's inputs goes among the server's.
  std::vector<std::size_t> to;
  for (std::size_t t = 0; t < s.spec.tensors.size(); ++t) {
    const std::string& name = s.spec.tensors[t].argument;
    if (name.empty()) {
      to.push_back(t);
      continue;
    }
    const auto at = std::find_if(inputs.begin(), inputs.end(),
                                 [&](const WireTensorSpec& i) { return i.name == name; });
    if (at == inputs.end()) {
      std::string names;
      for (const auto& i : inputs) names += (names.empty() ? "" : ", ") + i.name;
      throw UsageError(fmt::format("--inputs-file '{}': its samples' input '{}' is not one the "
                                   "server takes ({})",
                                   path, name, names));
    }
    to.push_back(static_cast<std::size_t>(at - inputs.begin()));
  }
  if (s.spec.tensors.size() != inputs.size())
    throw UsageError(fmt::format("--inputs-file '{}': each sample has {} inputs, the server takes "
                                 "{}",
                                 path, s.spec.tensors.size(), inputs.size()));
  std::vector<RequestSample> out;
  for (std::size_t k = 0; k < s.samples.size(); ++k) {
    RequestSample r;
    r.inputs.resize(inputs.size());
    for (std::size_t t = 0; t < s.samples[k].size() && t < to.size(); ++t)
      r.inputs[to[t]] = wire_tensor(s.samples[k][t], inputs[to[t]], path, k);
    // Its length: the first dimension that varies in the server's inputs (-1 past the batch).
    for (std::size_t i = 0; i < inputs.size() && r.length == 0; ++i)
      for (std::size_t d = 1; d < inputs[i].shape.size() && d < r.inputs[i].shape.size(); ++d)
        if (inputs[i].shape[d] < 0) {
          r.length = r.inputs[i].shape[d];
          break;
        }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace torchperf

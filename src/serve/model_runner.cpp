#include "torchperf/serve/model_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "torchperf/compat/torch_compat.h"
#include "torchperf/measure/memory_probe.h"
#include "torchperf/report/table_writer.h"

namespace torchperf {
namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    out += (i ? "," : "") + (shape[i] < 0 ? std::string("N") : std::to_string(shape[i]));
  return out + "]";
}

std::string input_names(const ModelSignature& signature) {
  std::string names;
  for (const auto& s : signature.inputs) names += (names.empty() ? "" : ", ") + s.name;
  return names;
}

// A named dimension's size in the first input that has it, and that input's name.
using NamedSizes = std::map<std::string, std::pair<std::int64_t, std::string>>;

// Inputs that share a --dim's name share its size: a mask two tokens longer than its ids is the
// client's mistake, which the model would report as a broadcast error (a 500) or not at all.
void check_named_sizes(const WireTensorSpec& s, const WireTensor& t, NamedSizes& named) {
  for (std::size_t d = 1; d < s.dims.size() && d < t.shape.size(); ++d) {
    if (s.dims[d].empty()) continue;
    const auto [at, first] = named.emplace(s.dims[d], std::make_pair(t.shape[d], t.name));
    if (!first && at->second.first != t.shape[d])
      throw RequestError(fmt::format("input '{}': size {} in dimension {} differs from {} in "
                                     "input '{}'; both are {}, expected one size",
                                     t.name, t.shape[d], d, at->second.first, at->second.second,
                                     s.dims[d]));
  }
}

}  // namespace

BatchingPolicy::MemoryBound available_call_memory(const ModelSignature& signature,
                                                  std::size_t instances) {
  BatchingPolicy::MemoryBound bound;
  const auto& m = signature.call_memory;
  if (!(m.bytes_per_token > 0)) return bound;
  const bool cuda = m.cuda_device >= 0;
  const std::int64_t available =
      cuda ? compat::cuda_available_bytes(m.cuda_device) : available_memory_bytes();
  if (available <= 0) {
    bound.call_bytes_from = fmt::format("--max-call-memory auto: the {}memory available is not "
                                        "known",
                                        cuda ? "device " : "");
    return bound;
  }
  const std::size_t n = std::max<std::size_t>(1, instances);
  bound.call_bytes = static_cast<std::int64_t>(0.8 * static_cast<double>(available) /
                                               static_cast<double>(n));
  bound.call_bytes_from = fmt::format("--max-call-memory auto: 80% of the {} of {}memory "
                                      "available at start{}",
                                      format_bytes(available), cuda ? "device " : "",
                                      n == 1 ? "" : fmt::format(", over {} instances", n));
  return bound;
}

std::string describe_call_memory(const ModelSignature& signature, const BatchingPolicy& policy) {
  const auto& m = signature.call_memory;
  if (!(m.bytes_per_token > 0))
    return m.measured.empty() ? "" : "call memory " + m.measured + ": no bound by memory";
  const bool tokens = signature.lengths.input >= 0;
  const std::string unit = tokens ? "padded token" : "sample";
  std::string out =
      fmt::format("call memory: {} ({})", describe_figures(policy.memory, unit), m.measured);
  const std::int64_t most = memory_tokens(policy);
  if (most == 0)
    return out + fmt::format("; no bound by memory ({})", policy.memory.call_bytes_from);
  return out + fmt::format("; a call may hold {} ({}): at most {} {}s a call, a request past it "
                           "alone gets 413",
                           format_bytes(policy.memory.call_bytes), policy.memory.call_bytes_from,
                           most, unit);
}

void conform_request(const ModelSignature& signature, InferenceRequest& request) {
  if (request.inputs.size() != signature.inputs.size())
    throw RequestError(fmt::format("the model takes {} input{}, the request has {}",
                                   signature.inputs.size(), signature.inputs.size() == 1 ? "" : "s",
                                   request.inputs.size()));
  // Matched by name, never by position: a wrong name is the client's mistake, and feeding it to
  // the model as whatever input sits in its place would answer 200 with a wrong result.
  for (const auto& t : request.inputs)
    if (std::none_of(signature.inputs.begin(), signature.inputs.end(),
                     [&](const WireTensorSpec& s) { return s.name == t.name; }))
      throw RequestError(fmt::format("input '{}' is not one of the model's inputs (expected {})",
                                     t.name, input_names(signature)));
  std::vector<WireTensor> ordered;
  for (const auto& s : signature.inputs) {
    auto it = std::find_if(request.inputs.begin(), request.inputs.end(),
                           [&](const WireTensor& t) { return t.name == s.name; });
    if (it == request.inputs.end())
      throw RequestError(fmt::format("input '{}' is missing (one name given twice?; expected {})",
                                     s.name, input_names(signature)));
    ordered.push_back(std::move(*it));
    request.inputs.erase(it);
  }
  request.inputs = std::move(ordered);
  std::int64_t batch = -1;
  NamedSizes named;
  for (std::size_t i = 0; i < signature.inputs.size(); ++i) {
    const WireTensorSpec& s = signature.inputs[i];
    const WireTensor& t = request.inputs[i];
    if (t.type != s.type)
      throw RequestError(fmt::format("input '{}' ({}): expected datatype {}, got {}", t.name,
                                     s.name, to_string(s.type), to_string(t.type)));
    if (t.shape.size() == s.shape.size() && !t.shape.empty() && t.shape[0] < 1)
      throw RequestError(fmt::format("input '{}' ({}): shape {} holds no sample; expected {} with "
                                     "N >= 1",
                                     t.name, s.name, shape_text(t.shape), shape_text(s.shape)));
    bool fits = t.shape.size() == s.shape.size() && !t.shape.empty();
    for (std::size_t d = 1; fits && d < s.shape.size(); ++d)
      fits = s.shape[d] < 0 || s.shape[d] == t.shape[d];
    if (!fits)
      throw RequestError(fmt::format("input '{}' ({}): expected shape {}, got {}", t.name, s.name,
                                     shape_text(s.shape), shape_text(t.shape)));
    for (std::size_t d = 1; d < s.longest.size() && d < t.shape.size(); ++d)
      if (s.longest[d] > 0 && t.shape[d] > s.longest[d])
        throw RequestError(fmt::format("input '{}': size {} in dimension {} is past the longest "
                                       "the model is served for, {} (its --dim's MAX)",
                                       t.name, t.shape[d], d, s.longest[d]));
    for (std::size_t d = 1; d < s.shortest.size() && d < t.shape.size(); ++d)
      if (t.shape[d] < std::max<std::int64_t>(1, s.shortest[d]))
        throw RequestError(fmt::format(
            "input '{}': size {} in dimension {} is below the shortest the model is served for, "
            "{}{}",
            t.name, t.shape[d], d, std::max<std::int64_t>(1, s.shortest[d]),
            s.shortest[d] > 0 ? " (its --dim's MIN)" : ""));
    check_named_sizes(s, t, named);
    if (const std::size_t bad = count_nonfinite(t); bad > 0)
      throw RequestError(fmt::format("input '{}': {} NaN/Inf value{}; expected finite numbers",
                                     t.name, bad, bad == 1 ? "" : "s"));
    if (batch >= 0 && t.shape[0] != batch)
      throw RequestError(fmt::format("input '{}': batch {} differs from the first input's {}",
                                     t.name, t.shape[0], batch));
    batch = t.shape[0];
  }
  if (batch < signature.batch_min || (signature.batch_max > 0 && batch > signature.batch_max))
    throw RequestError(
        signature.batch_min == signature.batch_max
            ? fmt::format("batch {}: the model takes a batch of exactly {} (a torch.export "
                          "program exported with a static batch); send {} sample{} per request",
                          batch, signature.batch_min, signature.batch_min,
                          signature.batch_min == 1 ? "" : "s")
            : signature.batch_max > 0
                  ? fmt::format("batch {}: the model takes batches from {} to {} (the range its "
                                "torch.export program was exported with)",
                                batch, signature.batch_min, signature.batch_max)
                  : fmt::format("batch {}: the model takes batches of at least {} (the range "
                                "its torch.export program was exported with)",
                                batch, signature.batch_min));
  for (const auto& name : request.outputs)
    if (std::none_of(signature.outputs.begin(), signature.outputs.end(),
                     [&](const WireTensorSpec& s) { return s.name == name; })) {
      std::string known;
      for (const auto& s : signature.outputs) known += (known.empty() ? "" : ", ") + s.name;
      throw RequestError(
          fmt::format("output '{}' is not one of the model's outputs ({})", name, known));
    }
}

std::int64_t request_batch(const InferenceRequest& request) {
  if (request.inputs.empty() || request.inputs[0].shape.empty()) return 1;
  return request.inputs[0].shape[0];
}

QueuedSize queued_size(const ModelSignature& signature, const InferenceRequest& request) {
  QueuedSize size;
  size.samples = request_batch(request);
  const auto& at = signature.lengths;
  if (at.input >= 0 && static_cast<std::size_t>(at.input) < request.inputs.size()) {
    const auto& shape = request.inputs[static_cast<std::size_t>(at.input)].shape;
    if (at.dim >= 0 && static_cast<std::size_t>(at.dim) < shape.size())
      size.length = shape[static_cast<std::size_t>(at.dim)];
  }
  return size;
}

std::vector<std::vector<const InferenceRequest*>> split_by_batch_range(
    const ModelSignature& signature, const std::vector<const InferenceRequest*>& batch) {
  std::vector<std::vector<const InferenceRequest*>> runs;
  std::int64_t in_run = 0;
  for (const InferenceRequest* r : batch) {
    const std::int64_t n = request_batch(*r);
    // Requests merge along the batch only when their other sizes agree, or the model pads them
    // to one length (checked at start-up not to change an answer).
    const auto same_sizes = [&](const InferenceRequest& a) {
      if (signature.lengths.merge) return true;
      for (std::size_t i = 0; i < a.inputs.size() && i < r->inputs.size(); ++i)
        if (!std::equal(a.inputs[i].shape.begin() + 1, a.inputs[i].shape.end(),
                        r->inputs[i].shape.begin() + 1, r->inputs[i].shape.end()))
          return false;
      return true;
    };
    if (runs.empty() || (signature.batch_max > 0 && in_run + n > signature.batch_max) ||
        !same_sizes(*runs.back().front())) {
      runs.emplace_back();
      in_run = 0;
    }
    runs.back().push_back(r);
    in_run += n;
  }
  return runs;
}

std::vector<WireTensor> select_outputs(const InferenceRequest& request,
                                       std::vector<WireTensor> outputs) {
  if (request.outputs.empty()) return outputs;
  std::vector<WireTensor> chosen;
  for (const auto& name : request.outputs)
    for (auto& t : outputs)
      if (t.name == name) chosen.push_back(t);
  return chosen;
}

EchoRunner::EchoRunner(std::vector<WireTensorSpec> inputs) {
  signature_.inputs = std::move(inputs);
  for (std::size_t i = 0; i < signature_.inputs.size(); ++i) {
    WireTensorSpec out = signature_.inputs[i];
    out.name = "output" + std::to_string(i);
    signature_.outputs.push_back(std::move(out));
  }
}

std::vector<std::vector<WireTensor>> EchoRunner::run(
    const std::vector<const InferenceRequest*>& batch) {
  std::vector<std::vector<WireTensor>> answers;
  answers.reserve(batch.size());
  for (const InferenceRequest* r : batch) {
    std::vector<WireTensor> outputs = r->inputs;
    for (std::size_t i = 0; i < outputs.size(); ++i) outputs[i].name = signature_.outputs[i].name;
    answers.push_back(std::move(outputs));
  }
  return answers;
}

}  // namespace torchperf

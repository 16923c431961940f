#include "torchperf/serve/torch_model_runner.h"

#include "torch_wire.h"

#include <torch/script.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include "torchperf/bench/configured_workload.h"
#include "torchperf/bench/measurement_parts.h"
#include "torchperf/compat/torch_error.h"
#include "torchperf/config/apply.h"
#include "torchperf/error.h"
#include "torchperf/models/accuracy.h"
#include "torchperf/models/exported_model.h"
#include "torchperf/feed/inputs.h"
#include "torchperf/feed/padded_copy.h"
#include "torchperf/measure/clock.h"
#include "torchperf/measure/memory_probe.h"
#include "torchperf/compat/allocation_peak.h"
#include "torchperf/compat/grad_scaling.h"
#include "torchperf/compat/torch_compat.h"
#include "torchperf/runtime/cuda_graph_model.h"
#include "torchperf/sweep/objective.h"
#include "torchperf/worker/python_served_model.h"

namespace torchperf {
namespace {

// 16-bit floats go back as FP32: the client sent FP32 and should not learn the precision knob.
at::Tensor to_wire(const at::Tensor& t) {
  at::Tensor out = t.detach().to(at::kCPU);
  if (out.scalar_type() == at::kHalf || out.scalar_type() == at::kBFloat16)
    out = out.to(at::kFloat);
  return out.contiguous();
}

std::vector<std::int64_t> batched_shape(const at::Tensor& t) {
  std::vector<std::int64_t> shape(t.sizes().begin(), t.sizes().end());
  if (!shape.empty()) shape[0] = -1;
  return shape;
}

// A named dimension's size in each request (its first appearance among the inputs).
using NamedSizes = std::map<std::string, std::int64_t>;

NamedSizes sizes_of(const std::vector<std::vector<std::string>>& names,
                    const std::vector<std::vector<std::int64_t>>& shapes) {
  NamedSizes sizes;
  for (std::size_t i = 0; i < names.size() && i < shapes.size(); ++i)
    for (std::size_t d = 0; d < names[i].size() && d + 1 < shapes[i].size(); ++d)
      if (!names[i][d].empty()) sizes.emplace(names[i][d], shapes[i][d + 1]);
  return sizes;
}

std::vector<std::vector<std::int64_t>> shapes_of(const std::vector<c10::IValue>& inputs) {
  std::vector<std::vector<std::int64_t>> shapes;
  for (const auto& v : inputs) {
    const auto sizes = v.toTensor().sizes();
    shapes.emplace_back(sizes.begin(), sizes.end());
  }
  return shapes;
}

// t with each named dimension grown to its size in `to`, the new places zeros (what a stream's
// padding holds: a mask's 0 masks them).
at::Tensor pad_to(const at::Tensor& t, const std::vector<std::string>& names, const NamedSizes& to) {
  std::vector<std::int64_t> shape(t.sizes().begin(), t.sizes().end());
  bool grows = false;
  for (std::size_t d = 0; d < names.size() && d + 1 < shape.size(); ++d)
    if (!names[d].empty() && to.at(names[d]) > shape[d + 1]) {
      shape[d + 1] = to.at(names[d]);
      grows = true;
    }
  if (!grows) return t;
  at::Tensor out = at::zeros(shape, t.options());
  copy_padded(out, t);
  return out;
}

// Rows [row, row + n) of an output with each dimension that follows a named one cut back to that
// dimension's size in `own` (padding only lengthens it).
at::Tensor cut_rows(const at::Tensor& out, std::int64_t row, std::int64_t n,
                    const std::vector<std::string>& follows, const NamedSizes& own) {
  at::Tensor t = out.narrow(0, row, n);
  for (std::size_t d = 1; d < follows.size() && static_cast<std::int64_t>(d) < t.dim(); ++d)
    if (!follows[d].empty()) t = t.narrow(static_cast<std::int64_t>(d), 0, own.at(follows[d]));
  return t.contiguous();
}

// What an answer holds per output value at its JSON form's peak: the value's wire copy (4 B for
// FP32) with its JSON node (16 B) and its text (about 20 characters for a float, with room for
// the string's growth), or, once encoded, the text twice (the body and the HTTP reply's copy).
// A binary answer holds less.
constexpr double kAnswerBytesPerValue = 48;

class TorchModelRunner final : public ModelRunner {
 public:
  explicit TorchModelRunner(ConfiguredWorkload w) : w_(std::move(w)) {
    signature_.batch_min = w_.batch_min;
    signature_.batch_max = w_.batch_max;
    const auto names = w_.workload.model->input_names();
    for (std::size_t i = 0; i < w_.given_inputs.size(); ++i) {
      const at::Tensor& given = w_.given_inputs[i];
      const at::Tensor& fed = w_.workload.inputs[i].toTensor();
      if (given.dim() == 0)
        throw WorkloadError(
            fmt::format("input {} is a scalar: a served input needs a batch "
                        "dimension",
                        i));
      const std::string name = i < names.size() ? names[i] : "input" + std::to_string(i);
      WireTensorSpec spec{name, wire_type_of(given.scalar_type(), "input '" + name + "'"),
                          batched_shape(given), {}};
      // A named dimension (--dim) varies between requests, up to its longest size.
      if (i < w_.longest.size()) {
        spec.longest.assign(1, 0);
        spec.shortest.assign(1, 0);
        spec.dims.assign(1, "");
        for (std::size_t d = 0; d < w_.longest[i].size() && d + 1 < spec.shape.size(); ++d) {
          spec.longest.push_back(w_.longest[i][d]);
          if (i < w_.shortest.size() && d < w_.shortest[i].size())
            spec.shortest.push_back(w_.shortest[i][d]);
          if (i < w_.dim_names.size() && d < w_.dim_names[i].size())
            spec.dims.push_back(w_.dim_names[i][d]);
          if (w_.longest[i][d] > 0) spec.shape[d + 1] = -1;
        }
      }
      if (w_.workload.spec && i < w_.workload.spec->tensors.size() &&
          w_.workload.spec->tensors[i].has_range)
        spec.values = {w_.workload.spec->tensors[i].low, w_.workload.spec->tensors[i].high};
      signature_.inputs.push_back(std::move(spec));
      fed_.push_back({fed.scalar_type(), fed.dim() == 4 && !fed.is_contiguous() &&
                                             fed.is_contiguous(at::MemoryFormat::ChannelsLast)});
    }
    // One call: the outputs' names and shapes, and a model that rejects its inputs fails here,
    // at start-up, not on the first request.
    std::vector<at::Tensor> outputs;
    try {
      outputs = forward(w_.workload.inputs);
    } catch (const std::exception& e) {
      throw WorkloadError(fmt::format("model '{}' rejected its inputs {}: {}", w_.model_name,
                                      describe_inputs(w_.workload.inputs),
                                      compat::concise_error_message(e.what())));
    }
    const std::int64_t batch = w_.given_inputs.front().size(0);
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const at::Tensor out = to_wire(outputs[i]);
      const std::string name = "output" + std::to_string(i);
      if (out.dim() == 0 || out.size(0) != batch)
        throw WorkloadError(fmt::format(
            "model '{}': output {} has shape {} at batch {}: a served model's outputs must "
            "keep the batch as their first dimension",
            w_.model_name, i, c10::str(out.sizes()), batch));
      signature_.outputs.push_back(
          {name, wire_type_of(out.scalar_type(), name), batched_shape(out)});
    }
    signature_.graphs = dynamic_cast<CudaGraphModel*>(w_.workload.model.get()) != nullptr;
    if (remote_) signature_.start = remote_->describe();
    if (const auto* ep = w_.workload.model->as_exported(); ep && ep->compiled())
      signature_.start = describe_start(ep->compiled()->cache_hit, ep->compiled()->compile_s,
                                        ep->compiled()->rebuilt_because);
    follows_.assign(outputs.size(), std::vector<std::string>(1));
    if (!w_.workload.stream_recipe) return;
    describe_lengths();
    check_padding(outputs);
    // An output dimension that grows with a named length varies as it does (the metadata's -1).
    for (std::size_t o = 0; o < follows_.size() && o < signature_.outputs.size(); ++o)
      for (std::size_t d = 1; d < follows_[o].size() && d < signature_.outputs[o].shape.size(); ++d)
        if (!follows_[o][d].empty()) signature_.outputs[o].shape[d] = -1;
  }

  const ModelSignature& signature() const override { return signature_; }

  // A model served in the Python worker has its process state there (its threads, its flags);
  // here a call only copies requests into a batch, on this thread alone: OpenMP's threads spun
  // after each copy, on the cores the worker's call runs on (a third of the server's samples,
  // section 27: OpenVINO served at 0.84 of its measured figure).
  void enter_thread() override {
    if (remote_) {
      compat::use_one_intra_op_thread_in_this_thread();
      return;
    }
    process_undo_ = enter_scope(w_.config, w_.workload, KnobScope::kProcess);
  }
  void exit_thread() override {
    if (process_undo_) process_undo_();
    process_undo_ = nullptr;
  }

  // Requests merge into one call only within the model's batch range: a program exported for
  // batch 2 given 3 rows would answer garbage past the second (LibTorch resizes its output).
  std::vector<std::vector<WireTensor>> run(
      const std::vector<const InferenceRequest*>& batch) override {
    std::vector<std::vector<WireTensor>> answers;
    for (const auto& call : split_by_batch_range(signature_, batch))
      for (auto& a : run_call(call)) answers.push_back(std::move(a));
    return answers;
  }

 private:
  std::vector<std::vector<WireTensor>> run_call(const std::vector<const InferenceRequest*>& batch) {
    std::vector<std::int64_t> sizes;
    std::int64_t total = 0;
    for (const InferenceRequest* r : batch) {
      sizes.push_back(request_batch(*r));
      total += sizes.back();
    }
    // Each request's named sizes, and the call's: its longest of each, the first padded by the
    // padding knob's rule (requests of other lengths merge only where padding was checked).
    std::vector<NamedSizes> own;
    NamedSizes call;
    for (const InferenceRequest* r : batch) {
      std::vector<std::vector<std::int64_t>> shapes;
      for (const auto& t : r->inputs) shapes.push_back(t.shape);
      own.push_back(sizes_of(w_.dim_names, shapes));
      for (const auto& [name, size] : own.back()) call[name] = std::max(call[name], size);
    }
    if (signature_.lengths.merge && !first_name_.empty() && call.count(first_name_))
      call[first_name_] = signature_.lengths.padded(call[first_name_]);
    const std::int64_t rows = serve_at(total, call);
    std::vector<std::vector<at::Tensor>> parts(signature_.inputs.size());
    for (std::size_t i = 0; i < signature_.inputs.size(); ++i) {
      for (const InferenceRequest* r : batch) {
        const WireTensor& given = r->inputs[i];
        at::Tensor part = at::from_blob(const_cast<std::uint8_t*>(given.bytes.data()), given.shape,
                                        at::TensorOptions().dtype(torch_type(given.type)));
        parts[i].push_back(i < w_.dim_names.size() ? pad_to(part, w_.dim_names[i], call) : part);
      }
      if (rows > total) {  // up to a captured graph's rows: zeros, cut off the answers
        std::vector<std::int64_t> shape(parts[i].front().sizes().begin(),
                                        parts[i].front().sizes().end());
        shape[0] = rows - total;
        parts[i].push_back(at::zeros(shape, parts[i].front().options()));
      }
    }
    std::vector<c10::IValue> inputs;
    if (remote_) {
      // Built where the worker reads it: the batch crosses without another copy.
      std::vector<std::pair<std::vector<std::int64_t>, at::ScalarType>> specs;
      for (const auto& p : parts) {
        std::vector<std::int64_t> shape(p.front().sizes().begin(), p.front().sizes().end());
        shape[0] = 0;
        for (const auto& part : p) shape[0] += part.size(0);
        specs.emplace_back(std::move(shape), p.front().scalar_type());
      }
      auto buffers = remote_->input_buffers(specs);
      for (std::size_t i = 0; i < parts.size(); ++i) {
        at::cat_out(buffers[i], parts[i]);
        inputs.emplace_back(std::move(buffers[i]));
      }
    } else {
      for (std::size_t i = 0; i < parts.size(); ++i) {
        at::Tensor t = parts[i].size() == 1 ? parts[i].front().clone() : at::cat(parts[i]);
        t = t.to(w_.workload.device, fed_[i].dtype);
        if (fed_[i].channels_last) t = t.contiguous(at::MemoryFormat::ChannelsLast);
        inputs.emplace_back(std::move(t));
      }
    }
    std::vector<at::Tensor> outputs;
    try {
      outputs = forward(inputs);
    } catch (const std::exception& e) {
      throw std::runtime_error(compat::concise_error_message(e.what()));
    }
    std::vector<std::vector<WireTensor>> answers(batch.size());
    for (std::size_t o = 0; o < outputs.size() && o < signature_.outputs.size(); ++o) {
      const at::Tensor out = to_wire(outputs[o]);
      if (out.dim() == 0 || out.size(0) != rows)
        throw std::runtime_error(fmt::format("output {} has {} rows for a batch of {}", o,
                                             out.dim() == 0 ? 0 : out.size(0), rows));
      std::int64_t row = 0;
      for (std::size_t r = 0; r < batch.size(); ++r) {
        const at::Tensor mine = cut_rows(out, row, sizes[r], follows_[o], own[r]);
        row += sizes[r];
        WireTensor t;
        t.name = signature_.outputs[o].name;
        t.type = signature_.outputs[o].type;
        t.shape.assign(mine.sizes().begin(), mine.sizes().end());
        const auto* src = static_cast<const std::uint8_t*>(mine.data_ptr());
        t.bytes.assign(src, src + mine.numel() * mine.element_size());
        answers[r].push_back(std::move(t));
      }
    }
    return answers;
  }

  // The rows a call of `total` runs at under the shape plan: its own, or a captured graph's
  // (its length in `call` padded up to its bucket's edge too); a shape not prepared is counted.
  std::int64_t serve_at(std::int64_t total, NamedSizes& call) {
    if (!planned_) return total;
    const bool named = !first_name_.empty() && call.count(first_name_);
    const auto at = prepared_.serving({total, named ? call[first_name_] : 0});
    if (!at) {
      ++off_plan_;
      return total;
    }
    if (!prepared_.pads) return total;
    if (named) call[first_name_] = at->length;
    return at->rows;
  }

  // Issue 63: what a call holds, so that the queue bounds a call by what memory allows. Two calls
  // at the longest length (where attention makes a token cost the most), of r and 2r rows, each
  // counted by the allocator: their difference is what a token takes, the rest what any call
  // does. Besides the call, a token's request holds its inputs' wire form and its answer the
  // outputs' JSON form, counted from the two calls' tensors. A model of one batch size is not
  // measured: no request makes its calls larger.
 public:
  void measure_call_memory() override {
    const std::int64_t rows = std::max<std::int64_t>(2, w_.batch_min);
    std::int64_t more = 2 * rows;
    if (w_.batch_max > 0) more = std::min(more, w_.batch_max);
    if (more <= rows) return;
    const std::int64_t length = first_name_.empty() ? 0 : longest_;
    const auto device = w_.workload.device.is_cuda() ? compat::DeviceKind::kCuda
                                                     : compat::DeviceKind::kCpu;
    struct Call {
      double peak = 0, wire = 0;
    };
    const auto call_at = [&](std::int64_t r) {
      Call c;
      compat::AllocationPeak peak(device);
      const auto inputs = inputs_at({r, length});
      for (std::size_t i = 0; i < inputs.size() && i < signature_.inputs.size(); ++i)
        c.wire += static_cast<double>(inputs[i].toTensor().numel()) *
                  static_cast<double>(element_size(signature_.inputs[i].type));
      // In the Python worker the call's memory is the worker's to read (its peak over what it
      // held before), not this process's allocator's.
      if (remote_) remote_->measure_next_call();
      for (const at::Tensor& out : forward(inputs))
        c.wire += static_cast<double>(out.numel()) * kAnswerBytesPerValue;
      compat::synchronize(device, w_.workload.device.index());
      c.peak = static_cast<double>(remote_ ? remote_->last_call_bytes() : peak.peak_bytes());
      return c;
    };
    auto& m = signature_.call_memory;
    try {
      const Call few = call_at(rows), many = call_at(more);
      const double unit = static_cast<double>(std::max<std::int64_t>(1, length));
      const double t1 = static_cast<double>(rows) * unit, t2 = static_cast<double>(more) * unit;
      m.bytes_per_token = (many.peak - few.peak) / (t2 - t1);
      m.fixed_bytes = few.peak - m.bytes_per_token * t1;
      // A call that grew faster than its rows, or allocator noise: no fixed part, so that the
      // bound errs on the side of refusing.
      if (m.fixed_bytes < 0 || m.bytes_per_token <= 0) {
        m.bytes_per_token = std::max(m.bytes_per_token, many.peak / t2);
        m.fixed_bytes = 0;
      }
      m.answer_bytes_per_token = std::max(0.0, many.wire / t2);
      if (device == compat::DeviceKind::kCuda)
        m.cuda_device = std::max<int>(0, w_.workload.device.index());
      if (remote_ && remote_->device().rfind("cuda", 0) == 0)
        m.cuda_device = std::max<int>(0, c10::Device(remote_->device()).index());
      m.measured = fmt::format("calls of {} and {} rows{}", rows, more,
                               length > 0 ? fmt::format(" at length {}", length) : "");
    } catch (const std::exception& e) {
      // Not bounded by memory, and the start-up line says why.
      m = {};
      m.measured = fmt::format("not measured: a call of {} or {} rows{} failed: {}", rows, more,
                               length > 0 ? fmt::format(" at length {}", length) : "",
                               compat::concise_error_message(e.what()));
    }
  }

 private:
  // Where a request's length is read (the first named dimension's first appearance) and the
  // padding knob's rule and buckets, which the server's queue shares.
  void describe_lengths() {
    for (std::size_t i = 0; i < w_.dim_names.size() && first_name_.empty(); ++i)
      for (std::size_t d = 0; d < w_.dim_names[i].size(); ++d)
        if (!w_.dim_names[i][d].empty()) {
          first_name_ = w_.dim_names[i][d];
          signature_.lengths.input = static_cast<int>(i);
          signature_.lengths.dim = static_cast<int>(d + 1);
          longest_ = w_.longest[i][d];
          break;
        }
    const PaddingPolicy padding = stream_policy_of(w_.config).padding;
    const std::int64_t longest = longest_;
    signature_.lengths.padded = [padding, longest](std::int64_t l) {
      return padding.padded(l, longest);
    };
    if (padding.kind == PaddingPolicy::Kind::kBuckets) signature_.lengths.edges = padding.edges;
  }

  // Padding must not change an answer (it does in a model that takes no mask): the typical
  // inputs run padded to every named dimension's longest, their outputs cut back and compared
  // with the unpadded ones under tune's default guard. Also learns which output dimensions follow
  // a named one (their size changes with it), so that answers are cut back to each request's.
  void check_padding(const std::vector<at::Tensor>& unpadded) {
    const auto shapes = shapes_of(w_.workload.inputs);
    const NamedSizes typical = sizes_of(w_.dim_names, shapes);
    NamedSizes longest;
    for (std::size_t i = 0; i < w_.dim_names.size(); ++i)
      for (std::size_t d = 0; d < w_.dim_names[i].size(); ++d)
        if (!w_.dim_names[i][d].empty()) longest[w_.dim_names[i][d]] = w_.longest[i][d];
    if (typical == longest) {
      signature_.lengths.check = "padding not checked (the typical lengths are the longest): "
                                 "requests merge only at one length";
      return;
    }
    std::vector<c10::IValue> padded_inputs;
    for (std::size_t i = 0; i < w_.workload.inputs.size(); ++i) {
      const at::Tensor t = w_.workload.inputs[i].toTensor();
      padded_inputs.emplace_back(i < w_.dim_names.size() ? pad_to(t, w_.dim_names[i], longest) : t);
    }
    std::vector<at::Tensor> padded;
    try {
      padded = forward(padded_inputs);
    } catch (const std::exception& e) {
      throw WorkloadError(fmt::format("model '{}' failed at its longest lengths {}: {}",
                                      w_.model_name, describe_inputs(padded_inputs),
                                      compat::concise_error_message(e.what())));
    }
    signature_.lengths.merge = learn_follows(unpadded, padded, typical, longest);
    if (!signature_.lengths.merge) return;
    std::vector<at::Tensor> cut;
    for (std::size_t o = 0; o < padded.size(); ++o)
      cut.push_back(cut_rows(padded[o].to(at::kCPU), 0, padded[o].size(0), follows_[o], typical));
    std::vector<at::Tensor> reference;
    for (const auto& t : unpadded) reference.push_back(t.to(at::kCPU));
    judge_padding(compare_outputs(reference, cut), typical, longest);
  }

  // follows_[o][d]: the named dimension output o's dimension d grows with, "" for none. False
  // (and the reason in the check) when a dimension changes in a way the lengths do not explain.
  bool learn_follows(const std::vector<at::Tensor>& unpadded, const std::vector<at::Tensor>& padded,
                     const NamedSizes& typical, const NamedSizes& longest) {
    for (std::size_t o = 0; o < unpadded.size() && o < padded.size(); ++o) {
      follows_[o].assign(static_cast<std::size_t>(unpadded[o].dim()), "");
      for (std::int64_t d = 1; d < unpadded[o].dim() && d < padded[o].dim(); ++d) {
        if (unpadded[o].size(d) == padded[o].size(d)) continue;
        for (const auto& [name, size] : typical)
          if (unpadded[o].size(d) == size && padded[o].size(d) == longest.at(name))
            follows_[o][static_cast<std::size_t>(d)] = name;
        if (follows_[o][static_cast<std::size_t>(d)].empty()) {
          signature_.lengths.check = fmt::format(
              "output {}'s dimension {} is {} at the typical lengths and {} at the longest, which "
              "no named length explains: requests merge only at one length",
              o, d, unpadded[o].size(d), padded[o].size(d));
          return false;
        }
      }
      if (unpadded[o].dim() != padded[o].dim()) {
        signature_.lengths.check = fmt::format(
            "output {} changes rank with its inputs' lengths: requests merge only at one length", o);
        return false;
      }
    }
    return true;
  }

  void judge_padding(const Accuracy& a, const NamedSizes& typical, const NamedSizes& longest) {
    const PointMetrics m = quality_metrics(quality_of(a));
    const std::string at = fmt::format("{} {} padded to {}", first_name_, typical.at(first_name_),
                                       longest.at(first_name_));
    if (const auto why = AccuracyGuard::default_guard().check(m)) {
      signature_.lengths.merge = false;
      signature_.lengths.check = fmt::format(
          "padding changes the answers ({} at {}): requests merge only at one length", *why, at);
      return;
    }
    signature_.lengths.check =
        fmt::format("padding checked at {}: cosine {:.6f}, max abs error {:.2e}; requests of "
                    "other lengths merge, padded",
                    at, a.cosine, a.max_abs_error);
  }

 public:
  void check_edges(const std::vector<std::int64_t>& edges,
                   const std::map<std::string, std::int64_t>& shortest) override {
    if (!signature_.lengths.merge || first_name_.empty() || edges.empty() || !w_.workload.spec)
      return;
    const auto least = shortest.find(first_name_);
    NamedSizes sizes = sizes_of(w_.dim_names, shapes_of(w_.workload.inputs));
    std::string checked;
    double worst_cosine = 1, worst_error = 0;
    std::int64_t previous = 0;
    for (const std::int64_t edge : edges) {
      // Padded to the edge, never past the longest served (the padding rule's cap).
      const std::int64_t target = std::min(edge, longest_);
      const std::int64_t length =
          std::max(previous + 1, least == shortest.end() ? std::int64_t{1} : least->second);
      previous = edge;
      if (length > longest_) break;
      if (length >= target) continue;  // one length in this bucket: nothing to pad
      sizes[first_name_] = length;
      NamedSizes padded_sizes = sizes;
      padded_sizes[first_name_] = target;
      const Accuracy a = padded_against_alone(sizes, padded_sizes);
      const std::string at = fmt::format("{} padded to {}", length, target);
      if (const auto why = AccuracyGuard::default_guard().check(quality_metrics(quality_of(a)))) {
        signature_.lengths.merge = false;
        signature_.lengths.check =
            fmt::format("padding changes the answers at the bucket edge {} ({} at {} {}): "
                        "requests merge only at one length",
                        edge, *why, first_name_, at);
        return;
      }
      checked += (checked.empty() ? "" : ", ") + at;
      worst_cosine = std::min(worst_cosine, a.cosine);
      worst_error = std::max(worst_error, a.max_abs_error);
    }
    if (checked.empty()) return;  // the load's check stands
    signature_.lengths.check = fmt::format(
        "padding checked at every bucket edge ({} {}): worst cosine {:.6f}, max abs error {:.2e}; "
        "requests of other lengths merge, padded",
        first_name_, checked, worst_cosine, worst_error);
  }

  PreparedShapes prepare_shapes(const ShapePlan& plan) override {
    ScopeExit process(remote_ ? Undo([] {})
                              : enter_scope(w_.config, w_.workload, KnobScope::kProcess));
    PreparedShapes p;
    // Padding a call up is allowed where padding was checked (lengths merge, or none varies) and
    // one length names the shape: a second named dimension would make shapes the plan cannot
    // name. The caller asks for it where the model replays CUDA graphs.
    std::set<std::string> named;
    for (const auto& names : w_.dim_names)
      for (const auto& n : names)
        if (!n.empty()) named.insert(n);
    p.pads = plan.pads && named.size() <= 1 && (signature_.lengths.merge || first_name_.empty());
    if (p.pads) p.edges = plan.edges;
    const auto start = steady_time().now();
    const std::int64_t before = memory_now();
    double per_token = 0;  // the most memory a shape took per row x length
    for (std::size_t i = 0; i < plan.shapes.size(); ++i) {
      const CallShape& shape = plan.shapes[i];
      if (to_seconds(steady_time().now() - start) > plan.budget_s) {
        p.stopped = fmt::format("{:g} s of preparing ran out with {} shapes of the plan left",
                                plan.budget_s, plan.shapes.size() - i);
        break;
      }
      const double tokens = static_cast<double>(shape.rows * std::max<std::int64_t>(1, shape.length));
      if (!within_budget(plan.budget_bytes, memory_now() - before, per_token, tokens)) {
        ++p.left_out;
        continue;
      }
      const std::int64_t was = memory_now();
      try {
        forward(inputs_at(shape));
      } catch (const std::exception& e) {
        // One shape that fails (out of memory at the most rows, say) leaves the others: a call
        // at it would fail as it comes, and is counted off the plan.
        if (p.failed++ == 0)
          p.first_failure = fmt::format(
              "{} rows{}: {}", shape.rows,
              shape.length > 0 ? fmt::format(" at length {}", shape.length) : "",
              compat::concise_error_message(e.what()));
        continue;
      }
      per_token = std::max(per_token, static_cast<double>(memory_now() - was) / tokens);
      p.shapes.insert(shape);
    }
    compat::synchronize(w_.workload.device.is_cuda() ? compat::DeviceKind::kCuda
                                                     : compat::DeviceKind::kCpu,
                        w_.workload.device.index());
    p.seconds = to_seconds(steady_time().now() - start);
    p.bytes = memory_now() - before;
    if (auto* graphs = dynamic_cast<CudaGraphModel*>(w_.workload.model.get()))
      graphs->capture_no_more();
    prepared_ = p;
    planned_ = true;
    return p;
  }

  // Where the model replays CUDA graphs, what ran uncaptured is the truth (a shape the plan did
  // not name, or one no prepared graph matches); elsewhere the calls at a shape not prepared.
  std::size_t off_plan_calls() const override {
    if (const auto* graphs = dynamic_cast<const CudaGraphModel*>(w_.workload.model.get());
        graphs && planned_)
      return graphs->uncaptured_calls();
    return off_plan_;
  }

 private:
  // Memory the prepared shapes take: the CUDA allocator's reserved bytes (graph pools included),
  // else the process's resident memory.
  std::int64_t memory_now() const {
    if (remote_) return remote_->resident_bytes();
    if (w_.workload.device.is_cuda()) {
      const std::int64_t reserved =
          compat::cuda_reserved_bytes(std::max<int>(0, w_.workload.device.index()));
      if (reserved >= 0) return reserved;
    }
    return current_rss_bytes();
  }

  // Inputs of one call at `shape`: drawn from the spec at its length, or the inputs given with
  // their rows repeated; fed as the configuration feeds them.
  std::vector<c10::IValue> inputs_at(const CallShape& shape) {
    std::vector<c10::IValue> given;
    if (w_.workload.spec) {
      InputSpec spec = *w_.workload.spec;
      if (shape.length > 0 && !first_name_.empty())
        spec = with_sizes(spec, {{first_name_, shape.length}});
      given = make_inputs(spec, shape.rows, w_.workload.seed);
    } else {
      for (const at::Tensor& t : w_.given_inputs)
        given.emplace_back(t.index_select(0, at::arange(shape.rows) % t.size(0)));
    }
    std::vector<c10::IValue> fed;
    for (std::size_t i = 0; i < given.size(); ++i) {
      at::Tensor t = given[i].toTensor().to(w_.workload.device, fed_[i].dtype);
      if (fed_[i].channels_last) t = t.contiguous(at::MemoryFormat::ChannelsLast);
      fed.emplace_back(std::move(t));
    }
    return fed;
  }

  // A sample at `own` sizes (drawn from the spec, fed as the configuration feeds it) run alone and
  // padded to `padded`, the padded answer cut back: how far apart the two are.
  Accuracy padded_against_alone(const NamedSizes& own, const NamedSizes& padded) {
    const std::vector<std::pair<std::string, std::int64_t>> named(own.begin(), own.end());
    std::vector<c10::IValue> alone, padded_inputs;
    // At the configuration's batch, as the load's check: a program may take no other.
    const std::int64_t batch = w_.given_inputs.front().size(0);
    const auto given = make_inputs(with_sizes(*w_.workload.spec, named), batch, w_.workload.seed);
    for (std::size_t i = 0; i < given.size(); ++i) {
      at::Tensor t = given[i].toTensor().to(w_.workload.device, fed_[i].dtype);
      if (fed_[i].channels_last) t = t.contiguous(at::MemoryFormat::ChannelsLast);
      padded_inputs.emplace_back(i < w_.dim_names.size() ? pad_to(t, w_.dim_names[i], padded) : t);
      alone.emplace_back(std::move(t));
    }
    std::vector<at::Tensor> reference, cut;
    try {
      for (const auto& t : forward(alone)) reference.push_back(t.to(at::kCPU));
      const auto out = forward(padded_inputs);
      for (std::size_t o = 0; o < out.size(); ++o)
        cut.push_back(cut_rows(out[o].to(at::kCPU), 0, batch, follows_[o], own));
    } catch (const std::exception& e) {
      throw WorkloadError(fmt::format("model '{}' failed at the bucket edge {}={} ({}): {}",
                                      w_.model_name, first_name_, padded.at(first_name_),
                                      describe_inputs(padded_inputs),
                                      compat::concise_error_message(e.what())));
    }
    return compare_outputs(reference, cut);
  }

  struct Fed {
    at::ScalarType dtype;
    bool channels_last;
  };

  std::vector<at::Tensor> forward(const std::vector<c10::IValue>& inputs) {
    if (remote_) return flatten_output(remote_->forward(inputs));  // its scopes are the worker's
    ScopeExit call(enter_scope(w_.config, w_.workload, KnobScope::kCall));
    return flatten_output(w_.workload.model->forward(inputs));
  }

  ConfiguredWorkload w_;
  // The model served in the Python worker (a Python or engine configuration), else null.
  PythonServedModel* remote_ = dynamic_cast<PythonServedModel*>(w_.workload.model.get());
  ModelSignature signature_;
  std::vector<Fed> fed_;
  std::string first_name_;  // the named dimension requests are queued and padded by
  std::int64_t longest_ = 0;
  std::vector<std::vector<std::string>> follows_;  // per output, per dimension (learn_follows)
  Undo process_undo_;
  bool planned_ = false;  // prepare_shapes ran: calls are served by prepared_
  PreparedShapes prepared_;
  std::size_t off_plan_ = 0;
};

}  // namespace

namespace {

struct TypePair {
  WireType wire;
  at::ScalarType torch;
};
constexpr TypePair kTypes[] = {{WireType::kBool, at::kBool},  {WireType::kUint8, at::kByte},
                               {WireType::kInt8, at::kChar},  {WireType::kInt16, at::kShort},
                               {WireType::kInt32, at::kInt},  {WireType::kInt64, at::kLong},
                               {WireType::kFp16, at::kHalf},  {WireType::kBf16, at::kBFloat16},
                               {WireType::kFp32, at::kFloat}, {WireType::kFp64, at::kDouble}};

}  // namespace

at::ScalarType torch_type(WireType type) {
  for (const auto& p : kTypes)
    if (p.wire == type) return p.torch;
  throw std::logic_error("torch_type: unmapped wire type");
}

WireType wire_type_of(at::ScalarType type, const std::string& what) {
  for (const auto& p : kTypes)
    if (p.torch == type) return p.wire;
  throw WorkloadError(fmt::format("{} is a {} tensor, which the inference protocol cannot carry",
                                  what, c10::toString(type)));
}

std::string describe_start(bool cache_hit, double compile_s, const std::string& rebuilt_because) {
  if (cache_hit) return "warm: its AOTInductor package from the cache";
  return fmt::format("cold: its AOTInductor package compiled in {:.1f} s{}, cached for the next start",
                     compile_s, rebuilt_because.empty() ? "" : " (" + rebuilt_because + ")");
}

WireType wire_type(DType dtype) { return wire_type_of(to_scalar_type(dtype), "the input"); }

std::vector<WireTensorSpec> wire_inputs(const InputSpec& spec) {
  std::vector<WireTensorSpec> out;
  for (std::size_t i = 0; i < spec.tensors.size(); ++i) {
    WireTensorSpec s;
    s.name = "input" + std::to_string(i);
    s.type = wire_type(spec.tensors[i].dtype);
    s.shape.push_back(-1);
    s.shape.insert(s.shape.end(), spec.tensors[i].shape.begin(), spec.tensors[i].shape.end());
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::unique_ptr<ModelRunner>> load_model_instances(const BenchOptions& options,
                                                               std::size_t count) {
  if (count == 0) throw UsageError("--instances: expected at least 1");
  std::vector<std::unique_ptr<ModelRunner>> instances;
  for (std::size_t i = 0; i < count; ++i) {
    // A Python or engine configuration runs in a Python worker per instance, prepared there as
    // its tune's point was (issue 84): what is served is what was measured.
    const RemoteModelMaker in_python = [&](const ResolvedConfiguration& config,
                                           const WorkloadTraits& traits, const Workload& w) {
      std::vector<at::Tensor> example;
      for (const auto& v : w.inputs) example.push_back(v.toTensor());
      return std::make_unique<PythonServedModel>(options, config, options.config, traits, example,
                                                 w.model->input_names(),
                                                 w.model->required_inputs(),
                                                 "serve-" + std::to_string(i));
    };
    ConfiguredWorkload w = open_configured_workload(options, in_python);
    // Worker knobs (allocator, BLAS, OpenMP variables) take at process start: the caller started
    // this process with their environment; check from inside that they took.
    if (i == 0 && !dynamic_cast<PythonServedModel*>(w.workload.model.get()) &&
        !worker_knobs_named(options.config).empty())
      confirm_worker_knobs(w.config);
    instances.push_back(std::make_unique<TorchModelRunner>(std::move(w)));
  }
  return instances;
}

}  // namespace torchperf

#include "torchperf/serve/torch_model_runner.h"

#include <torch/script.h>

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "torchperf/bench/configured_workload.h"
#include "torchperf/compat/torch_error.h"
#include "torchperf/config/apply.h"
#include "torchperf/error.h"
#include "torchperf/models/accuracy.h"
#include "torchperf/models/inputs.h"

namespace torchperf {
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
        for (std::size_t d = 0; d < w_.longest[i].size() && d + 1 < spec.shape.size(); ++d) {
          spec.longest.push_back(w_.longest[i][d]);
          if (w_.longest[i][d] > 0) spec.shape[d + 1] = -1;
        }
      }
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
  }

  const ModelSignature& signature() const override { return signature_; }

  void enter_thread() override {
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
    std::vector<c10::IValue> inputs;
    for (std::size_t i = 0; i < signature_.inputs.size(); ++i) {
      // The requests' own sizes (a call's requests agree in them; a named dimension varies).
      std::vector<std::int64_t> shape = batch.front()->inputs[i].shape;
      shape[0] = total;
      at::Tensor t =
          at::empty(shape, at::TensorOptions().dtype(torch_type(signature_.inputs[i].type)));
      auto* dst = static_cast<std::uint8_t*>(t.data_ptr());
      for (const InferenceRequest* r : batch) {
        const auto& bytes = r->inputs[i].bytes;
        if (!bytes.empty()) std::memcpy(dst, bytes.data(), bytes.size());
        dst += bytes.size();
      }
      t = t.to(w_.workload.device, fed_[i].dtype);
      if (fed_[i].channels_last) t = t.contiguous(at::MemoryFormat::ChannelsLast);
      inputs.emplace_back(std::move(t));
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
      if (out.dim() == 0 || out.size(0) != total)
        throw std::runtime_error(fmt::format("output {} has {} rows for a batch of {}", o,
                                             out.dim() == 0 ? 0 : out.size(0), total));
      const std::size_t row_bytes =
          static_cast<std::size_t>(out.numel() / total) * out.element_size();
      const auto* src = static_cast<const std::uint8_t*>(out.data_ptr());
      for (std::size_t r = 0; r < batch.size(); ++r) {
        WireTensor t;
        t.name = signature_.outputs[o].name;
        t.type = signature_.outputs[o].type;
        t.shape.assign(out.sizes().begin(), out.sizes().end());
        t.shape[0] = sizes[r];
        const std::size_t n = row_bytes * static_cast<std::size_t>(sizes[r]);
        t.bytes.assign(src, src + n);
        src += n;
        answers[r].push_back(std::move(t));
      }
    }
    return answers;
  }

  struct Fed {
    at::ScalarType dtype;
    bool channels_last;
  };

  std::vector<at::Tensor> forward(const std::vector<c10::IValue>& inputs) {
    ScopeExit call(enter_scope(w_.config, w_.workload, KnobScope::kCall));
    return flatten_output(w_.workload.model->forward(inputs));
  }

  ConfiguredWorkload w_;
  ModelSignature signature_;
  std::vector<Fed> fed_;
  Undo process_undo_;
};

}  // namespace

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
    ConfiguredWorkload w = open_configured_workload(options);
    // Worker knobs (allocator, BLAS, OpenMP variables) take at process start: the caller started
    // this process with their environment; check from inside that they took.
    if (i == 0 && !worker_knobs_named(options.config).empty()) confirm_worker_knobs(w.config);
    instances.push_back(std::make_unique<TorchModelRunner>(std::move(w)));
  }
  return instances;
}

}  // namespace torchperf

#include "torchperf/worker/python_served_model.h"

#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/script.h>

#include <fmt/format.h>

#include <cstring>
#include <fstream>

#include "torchperf/bench/bench_runner.h"
#include "torchperf/error.h"
#include "torchperf/models/python_side.h"
#include "torchperf/process/scratch_dir.h"
#include "torchperf/process/watched_child.h"
#include "torchperf/worker/paired_workers.h"
#include "torchperf/worker/python_worker.h"

namespace torchperf {
namespace {

// torch's dtype names (without "torch."), which the Python side reads with getattr(torch, name).
struct DtypeName {
  at::ScalarType type;
  const char* name;
};
constexpr DtypeName kDtypes[] = {
    {at::kFloat, "float32"}, {at::kDouble, "float64"}, {at::kHalf, "float16"},
    {at::kBFloat16, "bfloat16"}, {at::kLong, "int64"}, {at::kInt, "int32"},
    {at::kShort, "int16"}, {at::kChar, "int8"}, {at::kByte, "uint8"}, {at::kBool, "bool"}};

std::string dtype_name(at::ScalarType type) {
  for (const auto& d : kDtypes)
    if (d.type == type) return d.name;
  throw WorkloadError(fmt::format("a {} tensor cannot be handed to the Python worker",
                                  c10::toString(type)));
}

at::ScalarType dtype_named(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return d.type;
  throw RuntimeFailure("the Python worker answered a tensor of dtype '" + name +
                       "', which serve cannot carry");
}

constexpr std::size_t kAlign = 64;  // shared_region.py's ALIGN
std::size_t aligned(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

std::size_t served_models() {
  static std::size_t n = 0;
  return ++n;
}

}  // namespace

PythonServedModel::PythonServedModel(const BenchOptions& options,
                                     const ResolvedConfiguration& config,
                                     const Configuration& requested, const WorkloadTraits& traits,
                                     const std::vector<at::Tensor>& example,
                                     std::vector<std::string> input_names,
                                     std::size_t required_inputs, const std::string& tag)
    : request_(python_side_request(options, config, traits)),
      environment_(python_side_environment(options, config, requested, traits)),
      names_(std::move(input_names)),
      required_(required_inputs),
      in_(tag + "-" + std::to_string(served_models()) + "-in"),
      out_(tag + "-" + std::to_string(served_models()) + "-out") {
  // The first call's inputs, as a Python point gets them: a torch.save tuple.
  inputs_file_ = scratch_path("served-" + tag + "-inputs.pt");
  {
    const auto bytes = torch::jit::pickle_save(
        c10::ivalue::Tuple::create(std::vector<c10::IValue>(example.begin(), example.end())));
    std::ofstream out(inputs_file_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw RuntimeFailure("could not write the inputs file '" + inputs_file_ + "'");
  }
  request_.inputs = inputs_file_;
  // A length that varies: the worker warms on the stream the tune's point ran (each of its
  // shapes compiled or allocated once), and an engine converts with those dimensions dynamic,
  // as the tune converted it, so that its conversion comes from the cache.
  if (varies_in_size(options)) {
    stream_file_ = scratch_path("served-" + tag + "-stream.pt");
    const std::string unused_check = scratch_path("served-" + tag + "-check.pt");
    if (save_stream(options, config, stream_file_, unused_check)) request_.stream = stream_file_;
    std::error_code ignored;
    std::filesystem::remove(unused_check, ignored);
  }
  log_ = scratch_path("served-" + tag + ".log");
  name_ = "the Python worker serving " + config.to_string();
  // Preparing may compile (torch.compile, an engine's conversion): the compile's own limit.
  prepare_timeout_s_ = std::max(kWorkerTimeLimitS, options.compile_timeout_s);
  start();
}

PythonServedModel::~PythonServedModel() {
  worker_.reset();
  std::error_code ignored;
  std::filesystem::remove(inputs_file_, ignored);
  if (!stream_file_.empty()) std::filesystem::remove(stream_file_, ignored);
}

void PythonServedModel::start() {
  worker_ = std::make_unique<WorkerSession>(python_interpreter(), environment_, within(0), log_,
                                            nullptr,
                                            std::vector<std::string>{"-m", "torchperf.worker"});
  ++starts_;
  try {
    ask(to_request(request_), "preparing", prepare_timeout_s_);
  } catch (const Error& e) {
    keep_scratch_dir_if_named(e.what());
    throw;
  }
}

nlohmann::json PythonServedModel::ask(const nlohmann::json& request, const std::string& doing,
                                      double timeout_s) {
  return ask_side(*worker_, request, timeout_s, name_, log_, doing);
}

std::vector<at::Tensor> PythonServedModel::input_buffers(
    const std::vector<std::pair<std::vector<std::int64_t>, at::ScalarType>>& specs) {
  std::vector<std::size_t> offsets;
  std::size_t bytes = 0;
  for (const auto& [shape, type] : specs) {
    offsets.push_back(bytes);
    std::size_t n = c10::elementSize(type);
    for (const std::int64_t d : shape) n *= static_cast<std::size_t>(std::max<std::int64_t>(0, d));
    bytes = aligned(bytes + n);
  }
  std::uint8_t* region = in_.reserve(std::max<std::size_t>(bytes, kAlign));
  std::vector<at::Tensor> buffers;
  for (std::size_t i = 0; i < specs.size(); ++i)
    buffers.push_back(at::from_blob(region + offsets[i], specs[i].first,
                                    at::TensorOptions().dtype(specs[i].second)));
  return buffers;
}

c10::IValue PythonServedModel::forward(const std::vector<c10::IValue>& inputs) {
  if (!worker_ || !worker_->running()) start();
  PythonCallRequest call;
  call.slot = request_.slot;
  std::vector<at::Tensor> tensors;
  // Inputs already in the region (input_buffers) keep their places; others are laid out after
  // one another and copied in.
  const std::uint8_t* base = in_.data();
  const auto in_region = [&](const at::Tensor& t) {
    const auto* p = static_cast<const std::uint8_t*>(t.data_ptr());
    return base && t.is_contiguous() && p >= base && p + t.nbytes() <= base + in_.size();
  };
  bool all_there = !inputs.empty();
  for (const auto& v : inputs) all_there = all_there && in_region(v.toTensor());
  std::size_t bytes = 0;
  for (const auto& v : inputs) {
    at::Tensor t = v.toTensor().to(at::kCPU).contiguous();
    const std::int64_t offset =
        all_there ? static_cast<const std::uint8_t*>(t.data_ptr()) - base
                  : static_cast<std::int64_t>(bytes);
    call.inputs.push_back({dtype_name(t.scalar_type()),
                           std::vector<std::int64_t>(t.sizes().begin(), t.sizes().end()), offset});
    bytes = aligned(bytes + t.nbytes());
    tensors.push_back(std::move(t));
  }
  if (!all_there) {
    std::uint8_t* region = in_.reserve(std::max<std::size_t>(bytes, kAlign));
    for (std::size_t i = 0; i < tensors.size(); ++i)
      if (tensors[i].nbytes())
        std::memcpy(region + call.inputs[i].offset, tensors[i].data_ptr(), tensors[i].nbytes());
  }
  call.region = in_.path();
  call.region_size = static_cast<std::int64_t>(in_.size());
  call.outputs = out_.path();
  call.measure_memory = measure_next_;
  measure_next_ = false;
  PythonCallReply reply;
  try {
    reply = from_reply<PythonCallReply>(ask(to_request(call), "calling", 0), "a call");
  } catch (const Error& e) {
    keep_scratch_dir_if_named(e.what());  // a message that names the log keeps it
    throw;
  }
  last_call_bytes_ = reply.peak_bytes;
  const std::uint8_t* answer = out_.view(static_cast<std::size_t>(reply.region_size));
  std::vector<c10::IValue> outputs;
  for (const RegionTensor& t : reply.outputs) {
    const at::ScalarType type = dtype_named(t.dtype);
    std::size_t size = c10::elementSize(type);
    for (const std::int64_t d : t.shape) size *= static_cast<std::size_t>(std::max<std::int64_t>(0, d));
    if (t.offset < 0 || static_cast<std::size_t>(t.offset) + size > out_.size())
      throw RuntimeFailure(fmt::format("{}: an output of {} bytes at offset {} lies past its "
                                       "region's {} bytes", name_, size, t.offset, out_.size()));
    at::Tensor view = at::from_blob(const_cast<std::uint8_t*>(answer) + t.offset, t.shape,
                                    at::TensorOptions().dtype(type));
    // A copy: the region is written again by the next call.
    outputs.emplace_back(view.clone());
  }
  return c10::ivalue::Tuple::create(std::move(outputs));
}

std::int64_t PythonServedModel::resident_bytes() const {
  const pid_t pid = worker_ ? worker_->pid() : -1;
  return pid > 0 ? torchperf::resident_bytes(pid) : -1;
}

std::string PythonServedModel::describe() const {
  return fmt::format("in a Python worker (pid {}, log {})", worker_ ? worker_->pid() : -1, log_);
}

}  // namespace torchperf

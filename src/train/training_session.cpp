#include "torchperf/train/training_session.h"

#include "torchperf/models/exported_model.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "torchperf/bench/bench_runner.h"
#include "torchperf/compat/torch_compat.h"
#include "torchperf/compat/torch_error.h"
#include "torchperf/config/knob.h"
#include "torchperf/error.h"
#include "torchperf/measure/environment.h"
#include "torchperf/measure/memory_probe.h"
#include "torchperf/models/model.h"
#include "torchperf/models/python_side.h"
#include "torchperf/models/workload.h"
#include "torchperf/train/batch_loader.h"
#include "torchperf/train/grad_scaler.h"

namespace torchperf {
namespace {


std::int64_t wall_clock_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string choose_loss(const std::string& asked, const TrainingData& data) {
  if (asked == "auto") return data.classes() > 0 ? "cross-entropy" : "mse";
  if (asked != "cross-entropy" && asked != "mse")
    throw UsageError("--loss '" + asked + "': expected auto, cross-entropy or mse");
  if (asked == "cross-entropy" && data.classes() == 0)
    throw UsageError("--loss cross-entropy needs class targets, but the data's targets are "
                     "floating point (use --loss mse)");
  return asked;
}

void describe_reduced_precision(TrainingContext& c, const c10::Device& device,
                                const Environment& env) {
  if (device.is_cuda()) {
    c.reduced_precision_hardware = true;
    c.bf16_hardware = compat::cuda_supports_bf16();
    c.reduced_precision_evidence =
        c.bf16_hardware ? "a CUDA device with bf16 tensor cores (compute capability 8.0 or later)"
                        : "a CUDA device (fp16 tensor cores from Volta on)";
  } else {
    for (const auto& isa : env.cpu_isa)
      if (isa == "avx512_bf16" || isa == "amx_bf16") {
        c.reduced_precision_hardware = c.bf16_hardware = true;
        c.reduced_precision_evidence = "the CPU has " + isa;
      }
    if (!c.reduced_precision_hardware)
      c.reduced_precision_evidence = "the CPU has no bf16 instructions (avx512_bf16, amx_bf16)";
  }
}

// HOST:PORT (an IPv6 host in brackets), read here and not by torch's launcher, which failed
// 12 s later with a ValueError on "foo::bar" (issue 63).
void check_endpoint(const std::string& endpoint) {
  const auto colon = endpoint.rfind(':');
  const std::string host = colon == std::string::npos ? "" : endpoint.substr(0, colon);
  const std::string port = colon == std::string::npos ? "" : endpoint.substr(colon + 1);
  const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
  const bool host_ok = !host.empty() && (bracketed || host.find(':') == std::string::npos);
  const bool port_ok = !port.empty() && port.size() <= 5 &&
                       std::all_of(port.begin(), port.end(), [](char ch) {
                         return ch >= '0' && ch <= '9';
                       }) &&
                       std::stoi(port) >= 1 && std::stoi(port) <= 65535;
  if (!host_ok || !port_ok)
    throw UsageError("--rdzv-endpoint '" + endpoint +
                     "': expected HOST:PORT with a port from 1 to 65535 ([ADDRESS]:PORT for IPv6)");
}

// Each rank is a Python process with torch loaded (218 MiB of resident memory for the import
// alone, measured with torch 2.13 on CPU), then its model, batches and DDP's buckets: ranks that
// cannot all fit in 80% of the available memory (the rest for loader workers and the page cache)
// are refused before one starts (64 ranks on a 2-core machine grew past 5 GB, issue 63).
constexpr std::int64_t kRankFloorBytes = std::int64_t{300} << 20;

void check_rank_memory(int nproc, std::int64_t available) {
  if (nproc < 2 || available <= 0) return;
  const std::int64_t need = kRankFloorBytes * nproc;
  available = available / 5 * 4;
  if (need > available)
    throw UsageError(fmt::format(
        "--nproc {}: {} ranks take at least {:.1f} GiB ({} MiB each, a Python process with torch "
        "loaded, before the model and its data), past 80% of the {:.1f} GiB available; expected "
        "at most {} ranks on this machine",
        nproc, nproc, static_cast<double>(need) / (1 << 30), kRankFloorBytes >> 20,
        static_cast<double>(available) / 0.8 / (1 << 30), available / kRankFloorBytes));
}

// Ranks share this node's cores: each gets its share as its thread count (the threads knob's
// baseline) and as the cores its counts (loader threads) are sized to.
void plan_ranks(TrainingContext& c, int cores) {
  const RankSpec& r = c.spec.ranks;
  if (r.nproc < 1 || r.nnodes < 1) throw UsageError("--nproc and --nnodes: expected at least 1");
  if (r.node_rank < 0 || r.node_rank >= r.nnodes)
    throw UsageError("--node-rank " + std::to_string(r.node_rank) + ": expected 0 .. " +
                     std::to_string(r.nnodes - 1) + " (--nnodes " + std::to_string(r.nnodes) + ")");
  if (r.nnodes > 1 && r.rdzv_endpoint.empty())
    throw UsageError("--nnodes " + std::to_string(r.nnodes) +
                     ": expected --rdzv-endpoint HOST:PORT, the same on every node");
  if (!r.rdzv_endpoint.empty()) check_endpoint(r.rdzv_endpoint);
  if (!(r.collective_timeout_s > 0) || !(r.join_timeout_s > 0))
    throw UsageError("--collective-timeout and --join-timeout: expected a positive time");
  c.traits.world_size = r.world_size();
  if (!r.distributed()) return;
  const int share = std::max(1, std::max(1, cores) / r.nproc);
  c.traits.usable_cores = share;
  c.traits.default_threads = share;
  c.ranks_plan = fmt::format("{} rank(s) on this node{} x {} thread(s) each, on {} usable cores; "
                             "{}, DDP, a DistributedSampler per rank; batch is per rank",
                             r.nproc,
                             r.nnodes > 1 ? fmt::format(" of {} nodes", r.nnodes) : std::string(),
                             share, cores, c.device.rfind("cuda", 0) == 0 ? "NCCL" : "gloo");
  check_rank_memory(r.nproc, available_memory_bytes());
  if (r.nproc > cores)
    c.ranks_warning = fmt::format("{} ranks on {} usable cores: they share cores, and each "
                                  "waits for the others at every all-reduce",
                                  r.nproc, cores);
}

}  // namespace

TrainingContext TrainingContext::open(const TrainingSpec& spec) {
  TrainingContext c;
  c.spec = spec;
  if (spec.optimizer != "sgd" && spec.optimizer != "adam")
    throw UsageError("--optimizer '" + spec.optimizer + "': expected sgd or adam");
  if (!(spec.learning_rate > 0) || !std::isfinite(spec.learning_rate))
    throw UsageError("--lr: expected a positive learning rate");
  if (spec.lr_scaling != "none" && spec.lr_scaling != "linear")
    throw UsageError("--lr-scaling '" + spec.lr_scaling + "': expected none or linear");
  if (spec.grad_scaler != "auto" && spec.grad_scaler != "on" && spec.grad_scaler != "off")
    throw UsageError("--grad-scaler '" + spec.grad_scaler + "': expected auto, on or off");
  const c10::Device device = resolve_device(spec.device);
  c.device = device.str();
  c.data = open_training_data(spec.data);
  c.loss = choose_loss(spec.loss, *c.data);
  const Example first = c.data->get(0, Transfer::kFloat32);
  c.traits.image_input = first.input.dim() == 3 && at::isFloatingType(first.input.scalar_type());
  c.traits.floating_input = true;
  c.traits.uint8_data = c.data->uint8_images();
  c.traits.cuda = device.is_cuda();
  c.traits.cpu_fuser = false;
  const Environment env = capture_environment();
  c.traits.usable_cores = std::max(1, env.usable_cores);
  c.traits.default_threads = at::get_num_threads();
  c.traits.default_batch = 32;
  plan_ranks(c, env.usable_cores);
  describe_reduced_precision(c, device, env);
  if (spec.model.rfind("python:", 0) == 0) {
    // The user's own nn.Module (--from-python): trained in Python only (no TorchScript form).
    const std::string reference = spec.model.substr(7);
    PythonStep describe;
    describe.module = "torchperf.train_worker";
    describe.args = {"--describe", spec.model};
    describe.what = "--from-python '" + reference + "'";
    const nlohmann::json facts = run_python_step(describe);
    c.traits.torchscript_form = c.traits.torchscript = false;
    c.traits.python_definition = true;
    c.traits.convolutional = facts.value("convolutional", false);
    return c;
  }
  c.model = open_model(spec.model);
  const auto probe = c.model->load();
  if (probe->as_exported())
    throw ModelError("model '" + spec.model + "': train needs a trainable module, and a "
                     "torch.export program (.pt2) is an inference graph without autograd; train "
                     "the module it came from with --from-python MODULE:CALLABLE");
  // A batch is one tensor (images, vectors, tensors:FILE's inputs): a forward of more inputs
  // would fail at the first step with PyTorch's schema text.
  if (probe->required_inputs() > 1) {
    std::string names;
    for (const auto& n : probe->input_names()) names += (names.empty() ? "" : ", ") + n;
    throw ModelError(fmt::format(
        "model '{}' takes {} inputs ({}), and train feeds a batch of one tensor (images, "
        "vectors or tensors:FILE's inputs): expected a model of one input; wrap it in an "
        "nn.Module of one input and train that with --from-python MODULE:CALLABLE",
        spec.model, probe->required_inputs(), names));
  }
  auto* script = probe->as_torchscript();
  c.traits.torchscript = script != nullptr;
  // A built-in's Python definition lets the step run in Python (step=eager, compile, …).
  c.traits.python_definition = spec.model.rfind("builtin:", 0) == 0;
  c.traits.convolutional = script && (script->uses_operator("aten::conv2d") ||
                                      script->uses_operator("aten::_convolution"));
  return c;
}

double TrainingContext::learning_rate(const TrainingPlan& plan) const {
  // Goyal et al.'s linear scaling rule: k times the batch, k times the rate.
  if (spec.lr_scaling == "linear" && spec.reference_batch > 0)
    return spec.learning_rate * static_cast<double>(plan.batch) /
           static_cast<double>(spec.reference_batch);
  return spec.learning_rate;
}

AdviceContext TrainingContext::advice_context(const TrainingPlan& plan) const {
  AdviceContext a;
  a.plan = plan;
  a.cuda = traits.cuda;
  a.convolutional = traits.convolutional;
  a.torchscript = traits.torchscript && !plan.in_python();
  a.python_definition = traits.python_definition;
  a.bf16 = bf16_hardware;
  a.uint8_data = traits.uint8_data;
  a.usable_cores = traits.usable_cores;
  a.world_size = traits.world_size;
  a.reduced_precision_hardware = reduced_precision_hardware;
  a.reduced_precision_evidence = reduced_precision_evidence;
  return a;
}

struct TrainingSession::Impl {
  const TrainingContext* context = nullptr;
  ResolvedConfiguration config;
  TrainingPlan plan;
  c10::Device device{c10::kCPU};
  std::unique_ptr<Model> model;
  torch::jit::Module* module = nullptr;
  std::vector<at::Tensor> parameters;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<BatchLoader> loader;
  std::unique_ptr<GradScaler> scaler;
  std::size_t steps = 0;
  bool checked_output = false;

  void sync() const {
    compat::synchronize(device.is_cuda() ? compat::DeviceKind::kCuda : compat::DeviceKind::kCpu,
                        device.is_cuda() ? device.index() : -1);
  }

  void check_output(const at::Tensor& out, const at::Tensor& targets) const {
    const std::string& loss = context->loss;
    if (loss == "cross-entropy") {
      const std::int64_t classes = context->data->classes();
      if (out.dim() != 2 || out.size(0) != targets.size(0) || out.size(1) < classes)
        throw WorkloadError("the model's output " + c10::str(out.sizes()) +
                            " does not fit cross-entropy over " + std::to_string(classes) +
                            " classes with targets " + c10::str(targets.sizes()) + ": expected [" +
                            std::to_string(targets.size(0)) + ", C] with C >= " +
                            std::to_string(classes));
    } else if (out.sizes() != targets.sizes()) {
      throw WorkloadError("the model's output " + c10::str(out.sizes()) + " does not fit mse with targets " +
                          c10::str(targets.sizes()) + ": expected the same shape");
    }
  }

  at::Tensor forward_loss(const at::Tensor& inputs, const at::Tensor& targets) {
    c10::IValue out;
    if (checked_output) {
      out = model->forward({inputs});
    } else {
      // The first call tells whether the model accepts the data at all: its error is the
      // user's input (exit 5, as in bench), not a runtime failure.
      try {
        out = model->forward({inputs});
      } catch (const std::exception& e) {
        throw WorkloadError("the model rejected a batch of shape " + c10::str(inputs.sizes()) + ": " +
                            compat::concise_error_message(e.what()));
      }
    }
    if (!out.isTensor())
      throw WorkloadError("train expects the model to return one tensor, got " + out.tagKind());
    at::Tensor logits = out.toTensor();
    if (!checked_output) {
      check_output(logits, targets);
      checked_output = true;
    }
    if (context->loss == "cross-entropy") return at::cross_entropy_loss(logits.to(at::kFloat), targets);
    return at::mse_loss(logits.to(at::kFloat), targets);
  }

  void zero_grad() {
    // As optimizer.zero_grad(set_to_none) does it, in every LibTorch version (1.13 has no flag).
    for (auto& p : parameters) {
      at::Tensor& g = p.mutable_grad();
      if (!g.defined()) continue;
      if (plan.set_to_none) {
        g.reset();
      } else {
        g = g.detach();
        g.zero_();
      }
    }
  }
};

TrainingSession::TrainingSession(const TrainingContext& context, const Configuration& config)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.context = &context;
  s.config = resolve_training(config, context.traits);
  s.plan = plan_training(s.config);
  if (s.plan.in_python())
    throw ConfigError("step=" + s.plan.step + " runs the step in a Python worker, not in this "
                      "process (train starts one: RemoteTrainingSide)");
  s.device = c10::Device(context.device);
  s.model = context.model->load();
  s.model->set_training(true);
  s.model->to(s.device);
  auto* script = s.model->as_torchscript();
  if (script == nullptr) throw ModelError("train needs a TorchScript model");
  s.module = &script->module();
  for (const auto& p : s.module->parameters()) {
    if (s.plan.channels_last && p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
    if (p.requires_grad()) s.parameters.push_back(p);
  }
  if (s.parameters.empty()) throw ModelError(context.model->name() + ": no trainable parameters");
  if (s.plan.channels_last)
    for (const auto& b : s.module->buffers())
      if (b.dim() == 4) b.set_data(b.contiguous(at::MemoryFormat::ChannelsLast));
  const double lr = context.learning_rate(s.plan);
  if (context.spec.optimizer == "adam")
    s.optimizer = std::make_unique<torch::optim::Adam>(s.parameters, torch::optim::AdamOptions(lr));
  else
    s.optimizer = std::make_unique<torch::optim::SGD>(
        s.parameters, torch::optim::SGDOptions(lr).momentum(0.9));
  const std::string& scaler = context.spec.grad_scaler;
  if (scaler == "on" || (scaler == "auto" && s.plan.amp == Amp::kFp16))
    s.scaler = std::make_unique<GradScaler>();
  s.loader = std::make_unique<BatchLoader>(context.data,
                                           LoaderOptions::from(s.plan, context.spec.data.strict));
}

TrainingSession::~TrainingSession() = default;

Undo TrainingSession::enter() const {
  // The registry's own declarations, as bench applies them (threads, cudnn_benchmark): one way
  // to apply a knob. These act on the process, not on a workload.
  static const Workload no_workload;
  auto undos = std::make_shared<std::vector<Undo>>();
  for (const auto& knob : training_knobs()) {
    if (knob.scope != KnobScope::kProcess) continue;
    const ResolvedKnob& resolved = impl_->config.knob(knob.name);
    if (resolved.applicable) undos->push_back(knob.enter(resolved.value, no_workload));
  }
  return [undos] {
    for (auto it = undos->rbegin(); it != undos->rend(); ++it) (*it)();
  };
}

StepTimes TrainingSession::step(bool breakdown) {
  Impl& s = *impl_;
  StepTimes t;
  const auto device_kind = s.device.is_cuda() ? compat::DeviceKind::kCuda : compat::DeviceKind::kCpu;
  TimeSource& clock = *s.context->clock;
  auto mark = clock.now();
  const auto begin = mark;
  t.start_us = wall_clock_us();
  auto lap = [&](Phase phase) {
    if (breakdown) s.sync();
    const auto now = clock.now();
    t.ns[static_cast<std::size_t>(phase)] += std::chrono::duration<double, std::nano>(now - mark).count();
    mark = now;
  };

  Batch batch = s.loader->next();
  lap(Phase::kDataWait);

  const bool async = s.plan.non_blocking;
  at::Tensor inputs = batch.inputs.to(s.device, /*non_blocking=*/async);
  at::Tensor targets = batch.targets.to(s.device, /*non_blocking=*/async);
  if (inputs.scalar_type() == at::kByte) inputs = normalize_after_copy(inputs);
  if (s.plan.channels_last && inputs.dim() == 4)
    inputs = inputs.contiguous(at::MemoryFormat::ChannelsLast);
  t.samples = inputs.size(0);
  lap(Phase::kCopy);

  at::Tensor loss;
  if (s.plan.amp != Amp::kOff) {
    compat::set_autocast(device_kind, true, s.plan.amp == Amp::kBf16 ? "bfloat16" : "float16");
    try {
      loss = s.forward_loss(inputs, targets);
    } catch (...) {
      compat::set_autocast(device_kind, false, "bfloat16");
      compat::clear_autocast_cache();
      throw;
    }
    compat::set_autocast(device_kind, false, "bfloat16");
    compat::clear_autocast_cache();
  } else {
    loss = s.forward_loss(inputs, targets);
  }
  lap(Phase::kForward);

  // The loss is read every step (a host sync, as a logging loop does) to catch divergence.
  t.loss = loss.item<double>();
  if (!std::isfinite(t.loss) && !s.scaler)
    throw TrainingDiverged("the loss became " + std::string(std::isnan(t.loss) ? "NaN" : "Inf") +
                           " at step " + std::to_string(s.steps + 1) +
                           " (with amp=fp16, or --grad-scaler on, the scaler skips such steps)");
  lap(Phase::kOther);

  if (s.scaler)
    s.scaler->scale(loss).backward();
  else
    loss.backward();
  lap(Phase::kBackward);

  if (s.scaler)
    t.stepped = s.scaler->step(*s.optimizer, s.parameters);
  else
    s.optimizer->step();
  s.zero_grad();
  if (!breakdown) s.sync();
  lap(Phase::kOptimizer);

  t.total_ns = std::chrono::duration<double, std::nano>(clock.now() - begin).count();
  ++s.steps;
  return t;
}

Breakdown TrainingSession::run(std::size_t warmup, std::size_t steps,
                               const std::function<void(std::size_t)>& progress,
                               const std::function<void(std::size_t, const StepTimes&)>& on_step) {
  const ScopeExit restore(enter());
  std::size_t done = 0;
  for (std::size_t i = 0; i < warmup; ++i) {
    step(true);
    if (progress) progress(++done);
  }
  const bool cuda = impl_->device.is_cuda();
  if (cuda) compat::reset_cuda_peak(impl_->device.index());
  reset_peak_rss();
  std::vector<StepTimes> times;
  for (std::size_t i = 0; i < steps; ++i) {
    times.push_back(step(true));
    if (on_step) on_step(i, times.back());
    if (progress) progress(++done);
  }
  Breakdown b = summarize_steps(times);
  if (cuda) {
    b.peak_memory_bytes = compat::cuda_peak_allocated_bytes(impl_->device.index());
    b.memory_capacity_bytes = compat::cuda_memory_capacity_bytes(impl_->device.index());
  } else {
    b.peak_memory_bytes = peak_rss_bytes();
    b.memory_capacity_bytes = memory_capacity_bytes();
  }
  b.skipped_examples = skipped_examples();  // warm-up included: every file read so far
  return b;
}

const ResolvedConfiguration& TrainingSession::configuration() const { return impl_->config; }
const TrainingPlan& TrainingSession::plan() const { return impl_->plan; }
std::size_t TrainingSession::steps_done() const { return impl_->steps; }
std::size_t TrainingSession::skipped_examples() const { return impl_->loader->skipped(); }
std::int64_t TrainingSession::skipped_steps() const {
  return impl_->scaler ? impl_->scaler->skipped_steps() : 0;
}
bool TrainingSession::on_cuda() const { return impl_->device.is_cuda(); }

}  // namespace torchperf

#include "torchperf/bench/bench_runner.h"

#include "torchperf/bench/timed_run.h"
#include "torchperf/bench/bench_side.h"
#include "torchperf/bench/configured_workload.h"
#include "torchperf/bench/measurement_parts.h"
#include "bench_session.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>

#include "torchperf/compat/torch_compat.h"
#include "torchperf/compat/torch_error.h"
#include "torchperf/config/apply.h"
#include "torchperf/error.h"
#include "torchperf/measure/memory_probe.h"
#include "torchperf/config/knob.h"
#include "torchperf/models/accuracy.h"
#include "torchperf/models/exported_model.h"
#include "torchperf/models/flop_counter.h"
#include "torchperf/feed/inputs.h"
#include "torchperf/models/workload.h"
#include "torchperf/runtime/cuda_graph_model.h"
#include "torchperf/runtime/runtime.h"
#include "torchperf/text.h"

namespace torchperf {
namespace {

using Reference = SavedOutputs;

c10::IValue forward_in_scope(const ResolvedConfiguration& config, Workload& w) {
  ScopeExit process(enter_scope(config, w, KnobScope::kProcess));
  ScopeExit call(enter_scope(config, w, KnobScope::kCall));
  return w.model->forward(w.inputs);
}

std::vector<at::Tensor> to_cpu_copy(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> out;
  for (const auto& t : tensors) out.push_back(t.detach().to(at::kCPU).clone());
  return out;
}

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024)); }

// An allocation the machine refused, named by the batch and the bytes asked for.
std::string out_of_memory_text(const Session& s, const std::string& batch,
                               const std::string& message) {
  const auto bytes = compat::requested_allocation_bytes(message);
  return fmt::format("model '{}' at batch {}: out of memory{} (lower --batch{})", s.source->name(),
                     batch, bytes ? " allocating " + gib(static_cast<double>(*bytes)) : "",
                     s.memory_cap_bytes > 0 ? "; the memory cap is " +
                                                  gib(static_cast<double>(s.memory_cap_bytes))
                                            : "");
}

// Runs f; an allocation the machine refuses on the way (activations at a big batch, autograd's
// saved tensors) becomes a ResourceLimit naming the batch and the bytes, not LibTorch's text.
template <typename F>
auto naming_out_of_memory(const Session& s, const std::string& batch, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    const std::string message = compat::concise_error_message(e.what());
    if (!compat::is_out_of_memory_message(message)) throw;
    throw ResourceLimit(out_of_memory_text(s, batch, message));
  }
}

// Inputs that alone exceed the memory cap are refused before they are allocated: the batch
// knob makes them from the spec at batch 1 times the batch.
void refuse_inputs_over_cap(const Session& s, const Workload& w, const std::string& batch) {
  if (s.memory_cap_bytes <= 0 || !s.spec || batch == "n/a") return;
  double per_sample = 0;
  for (const auto& v : w.inputs)
    if (v.isTensor()) per_sample += static_cast<double>(v.toTensor().nbytes());
  double n = 0;
  try {
    n = std::stod(batch);
  } catch (const std::exception&) {
    return;  // the batch knob refuses it with its own message
  }
  const double bytes = per_sample * n;
  if (bytes > static_cast<double>(s.memory_cap_bytes))
    throw ResourceLimit(fmt::format(
        "model '{}' at batch {}: the inputs alone need {}, over the memory cap of {} "
        "(--memory-cap); lower --batch",
        s.source->name(), batch, gib(bytes), gib(static_cast<double>(s.memory_cap_bytes))));
}

// The fp32, eval, no_grad output at the batch the configuration uses (first call: rejections of
// the inputs surface here, as the user's error, not the configuration's).
// A torch.export program's reference: PyTorch runs the program eagerly (the Python side), with
// its FLOP count; C++ has no eager runner for it. A static program's own batch stands in for the
// default batch "1" it cannot take.
Reference compute_program_reference(const Session& s, Workload& w, const WorkloadTraits& traits,
                                    const std::string& batch, bool count) {
  Configuration careful;
  const Knob& batch_knob = find_knob("batch");
  if (batch != "n/a" && (batch != "1" || batch_knob.applies(traits, batch).applies))
    careful.set("batch", batch);
  const ResolvedConfiguration config = resolve(careful, traits);
  refuse_inputs_over_cap(s, w, batch);
  if (config.knob("batch").applicable) batch_knob.prepare(config.value("batch"), w);
  Reference ref;
  std::uint64_t flops = 0;
  ref.outputs = w.model->as_exported()->eager_outputs(w.inputs, count ? &flops : nullptr);
  ref.flops_per_sample = flops / static_cast<std::uint64_t>(std::max<std::int64_t>(
                                     1, w.inputs.empty() || w.inputs[0].toTensor().dim() == 0
                                            ? 1
                                            : w.inputs[0].toTensor().size(0)));
  return ref;
}

// inputs (when given) receives the inputs the reference was computed from, on the CPU.
Reference compute_reference(const Session& s, const std::string& batch, bool count,
                            std::vector<at::Tensor>* inputs = nullptr) {
  Workload w = load_workload(s);
  const WorkloadTraits traits = describe_workload(w, s.spec == std::nullopt,
                                                  s.source->program_signature());
  const auto keep_inputs = [&] {
    if (!inputs) return;
    inputs->clear();
    for (const auto& v : w.inputs) inputs->push_back(v.toTensor().detach().to(at::kCPU).clone());
  };
  if (traits.exported_program) {
    Reference ref = compute_program_reference(s, w, traits, batch, count);
    keep_inputs();
    return ref;
  }
  Configuration careful;
  if (traits.can_train_mode) careful.set("mode", "eval");
  careful.set("grad", "no_grad");
  if (traits.cuda) careful.set("tf32", "off");  // a true fp32 reference: cuDNN uses TF32 by default
  if (batch != "n/a") careful.set("batch", batch);
  const ResolvedConfiguration config = resolve(careful, traits);
  refuse_inputs_over_cap(s, w, batch);
  naming_out_of_memory(s, batch, [&] { prepare_workload(config, w); });
  keep_inputs();
  Reference ref;
  SteadyTimeSource clock;
  const auto started = clock.now();
  try {
    ref.outputs = to_cpu_copy(flatten_output(forward_in_scope(config, w)));
  } catch (const std::exception& e) {  // c10::Error, or TorchScript's JITException
    const std::string message = compat::concise_error_message(e.what());
    if (compat::is_out_of_memory_message(message))
      throw ResourceLimit(out_of_memory_text(s, batch, message));
    throw WorkloadError("model '" + s.source->name() + "' rejected its inputs " +
                        describe_inputs(w.inputs) + ": " + message);
  }
  const double call_s = to_seconds(clock.now() - started);
  if (s.call_limit_s > 0 && call_s > s.call_limit_s)
    throw ResourceLimit(fmt::format(
        "model '{}' at batch {}: one call took {:.3g} s (the fp32 reference, cold), far over the "
        "--time budget of {:.3g} s: no sample fits (raise --time, lower --batch, or pass "
        "--allow-overrun to measure anyway)",
        s.source->name(), batch, call_s, s.time_budget_s));
  if (count) {
    try {
      const FlopCount flops = count_flops([&] { forward_in_scope(config, w); });
      const auto batch_size = w.inputs.empty() || w.inputs[0].toTensor().dim() == 0
                                  ? 1
                                  : w.inputs[0].toTensor().size(0);
      ref.flops_per_sample =
          flops.flops / static_cast<std::uint64_t>(std::max<std::int64_t>(1, batch_size));
    } catch (const std::exception& e) {
      throw RuntimeFailure("counting FLOPs of model '" + s.source->name() +
                           "' failed: " + compat::concise_error_message(e.what()));
    }
  }
  return ref;
}

Reference load_reference(const std::string& path) { return load_saved_outputs(path); }

struct Prepared {
  Workload workload;
  WorkloadTraits traits;
  ResolvedConfiguration config;
  double setup_ms = 0;
  double stream_warm_s = -1;
  std::int64_t rss_before = 0;
  TimedRun run;
};

// The runtime runs the form it takes: a built-in's program for AOTInductor (loaded first as
// TorchScript, which describes it and makes its reference).
void load_runtime_form(const Session& s, const Runtime& runtime, const WorkloadTraits& traits,
                       Workload& w) {
  if (runtime.form(traits) != ModelForm::kProgram || w.model->as_exported()) return;
  w.model = s.source->load_program();
  if (!w.model) throw ModelError("model '" + s.source->name() + "' has no torch.export program");
  if (auto* ep = w.model->as_exported())
    ep->set_compile_limits(within(s.compile_timeout_s, s.memory_cap_bytes));
  w.model->to(s.device);
}

// A configuration run elsewhere (serve's Python worker) is applied there; here only what shapes
// the inputs it is fed: the batch, and the stream's padding and batching policy.
void shape_inputs(const ResolvedConfiguration& config, Workload& w) {
  if (const ResolvedKnob& batch = config.knob("batch"); batch.applicable)
    find_knob("batch").prepare(batch.value, w);
  if (w.stream_recipe) w.stream_recipe->policy = stream_policy_of(config, w.stream_recipe->policy);
}

void apply_configuration(const ResolvedConfiguration& config, const Runtime& runtime,
                         Workload& w) {
  // The python runtime's knobs mean what PyTorch in Python makes of them: never applied here.
  if (runtime.worker() != RuntimeWorker::kCpp)
    throw UsageError("configuration " + config.to_string() + ": " + runtime.label() +
                     " runs in the Python worker, not in LibTorch here (bench and tune start it; "
                     "serve runs runtime=cpp configurations only)");
  try {
    prepare_workload(config, w);
    // Here, not for the reference: only a timed run needs the stream's batches.
    if (w.stream_recipe) finish_stream(w, stream_policy_of(config, w.stream_recipe->policy));
  } catch (const CompileError& e) {  // a compile keeps its kind (and exit code), named by config
    throw CompileError("configuration " + config.to_string() + ": " + e.what());
  } catch (const ResourceLimit& e) {
    throw ResourceLimit("configuration " + config.to_string() + ": " + e.what());
  } catch (const ConfigError& e) {  // a value its workload cannot take (bucket edges too short)
    throw ConfigError("configuration " + config.to_string() + ": " + e.what());
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    throw RuntimeFailure("configuration " + config.to_string() +
                         " could not be applied: " + compat::concise_error_message(e.what()));
  }
}

std::unique_ptr<Prepared> prepare(const Session& s, const Configuration& requested,
                                  TimeSource& time) {
  auto p = std::make_unique<Prepared>();
  p->rss_before = current_rss_bytes();
  const auto start = time.now();
  p->workload = load_workload(s);
  p->traits =
      describe_workload(p->workload, s.spec == std::nullopt, s.source->program_signature());
  p->config = resolve(requested, p->traits);
  const Runtime& runtime = runtime_of(p->config, p->traits);
  load_runtime_form(s, runtime, p->traits, p->workload);
  apply_configuration(p->config, runtime, p->workload);
  p->setup_ms = to_seconds(time.now() - start) * 1e3;
  p->run = make_timed_run(p->workload, p->config);
  if (p->workload.stream) {
    // One pass before timing: each shape's first call (TorchScript's profiling runs, a CUDA
    // graph's capture, the allocator's first blocks) is a one-off cost, reported apart.
    const auto warm = time.now();
    p->run.enter();
    ScopeExit leave(p->run.exit);
    p->run.iterate();
    p->run.synchronize();
    p->stream_warm_s = to_seconds(time.now() - warm);
  }
  return p;
}

StreamFigures figures_of(const ShapeStream& stream, const StreamRecipe& recipe) {
  StreamFigures f;
  for (const auto& d : recipe.dims)
    f.dims += (f.dims.empty() ? "" : " ") + d.name + "=" + d.distribution.text;
  f.batches = static_cast<std::int64_t>(stream.batches.size());
  f.samples = stream.samples;
  f.useful_tokens = stream.useful_elements;
  f.padded_tokens = stream.padded_elements;
  f.padding_share = stream.padding_share();
  f.timed_batches = static_cast<std::int64_t>(stream.timed.size());
  f.pass_scale = stream.pass_scale();
  return f;
}

// What a run is fed, in LibTorch's names; a stream's as its typical (median-length) samples and
// where its lengths come from, not as one fixed shape.
std::string inputs_text(const Session& s, const Workload& w) {
  std::string text = describe_inputs(w.inputs);
  if (s.dims.empty()) return text;
  text += " at the median length; a stream of";
  for (const auto& d : s.dims) text += " " + d.name + "=" + d.distribution.text;
  return text;
}

std::int64_t batch_of(const Workload& w) {
  if (w.stream) return w.stream->samples;
  if (w.inputs.empty() || !w.inputs[0].isTensor() || w.inputs[0].toTensor().dim() == 0) return 1;
  return w.inputs[0].toTensor().size(0);
}

// A stream's timed pass weighs its samples over its pass scale (Measurement::samples_per_call).
double samples_per_call(const Workload& w) {
  const double batch = static_cast<double>(batch_of(w));
  return w.stream ? batch / w.stream->pass_scale() : batch;
}

// Padding must not change an answer (it does in a model that takes no attention mask): the
// shortest, median and longest samples' rows of their padded batches against each sample run
// alone, unpadded, in the same configuration. Not timed.
void check_padding(Measurement& m, Prepared& p) {
  const ShapeStream& stream = *p.workload.stream;
  const std::vector<c10::IValue> typical = p.workload.inputs;
  ScopeExit restore([&] { p.workload.inputs = typical; });
  std::vector<PaddedRun> runs;
  try {
    for (const StreamSlot& slot : padding_check_slots(stream)) {
      PaddedRun r;
      r.slot = slot;
      p.workload.inputs = stream.batches[slot.batch].inputs;
      r.padded = to_cpu_copy(flatten_output(forward_in_scope(p.config, p.workload)));
      p.workload.inputs = unpadded_sample(stream, *p.workload.stream_recipe, slot);
      r.alone = to_cpu_copy(flatten_output(forward_in_scope(p.config, p.workload)));
      runs.push_back(std::move(r));
    }
  } catch (const std::exception& e) {
    throw RuntimeFailure("configuration " + p.config.to_string() + " failed on a sample alone: " +
                         compat::concise_error_message(e.what()));
  }
  add_padding_check(m, runs);
}

// Fills a measurement from its samples and checks its output against the reference.
// paired: the samples come from an interleaved comparison, whose stopping rule is the ratio's.
Measurement finish(const Session& s, Prepared& p, const SampleSet& samples, const Reference& ref,
                   double faults_per_iteration, const SamplingOptions& sampling, bool paired) {
  Measurement m;
  m.model = s.source->name();
  m.inputs = inputs_text(s, p.workload);
  m.input_source = s.input_source;
  m.device = p.workload.device.str();
  m.batch = batch_of(p.workload);
  m.configuration = p.config;
  m.setup_ms = p.setup_ms;
  if (auto* ep = p.workload.model->as_exported(); ep && ep->compiled()) {
    m.compile_s = ep->compiled()->compile_s;
    m.compile_cache_hit = ep->compiled()->cache_hit;
    m.package = ep->compiled()->path;
    if (!ep->compiled()->rebuilt_because.empty())
      m.warnings.push_back(ep->compiled()->rebuilt_because + "; compiled again");
    if (!ep->compiled()->isa_note.empty()) m.warnings.push_back(ep->compiled()->isa_note);
  }
  if (const auto* graphs = dynamic_cast<const CudaGraphModel*>(p.workload.model.get()))
    m.capture_s = graphs->capture_s();
  m.rss_before_bytes = p.rss_before;
  // On CUDA the device's memory is what runs out: the caching allocator's peak is the measure.
  const std::int64_t device_peak =
      p.workload.device.is_cuda() ? compat::cuda_peak_allocated_bytes(p.workload.device.index())
                                  : -1;
  m.peak_memory_bytes = device_peak >= 0 ? device_peak : peak_rss_bytes();
  m.peak_memory_kind = device_peak >= 0 ? "cuda-caching-allocator" : "process-rss";
  add_page_faults(m, faults_per_iteration);
  m.flops_per_sample = ref.flops_per_sample;
  if (const auto& stream = p.workload.stream) {
    m.stream = figures_of(*stream, *p.workload.stream_recipe);
    m.stream->warm_s = p.stream_warm_s;
  }
  add_timing(m, samples, sampling, paired);

  std::vector<at::Tensor> output;
  try {
    output = flatten_output(forward_in_scope(p.config, p.workload));
  } catch (const std::exception& e) {
    throw RuntimeFailure("configuration " + p.config.to_string() +
                         " failed: " + compat::concise_error_message(e.what()));
  }
  add_output_check(m, ref.outputs, output);
  if (p.workload.stream && s.check_padding) check_padding(m, p);
  const ResolvedKnob& threads = p.config.knob("threads");
  if (threads.applicable && std::stoi(threads.value) > p.traits.usable_cores)
    m.warnings.push_back("threads=" + threads.value + " exceeds the " +
                         std::to_string(p.traits.usable_cores) +
                         " usable cores: oversubscribed threads make timings noisy");
  return m;
}

bool reset_peaks(const c10::Device& device) {
  if (device.is_cuda()) compat::reset_cuda_peak(device.index());
  return reset_peak_rss();
}

}  // namespace

SamplingOptions sampling_options(const BenchOptions& o) {
  return sampling_options(o, resolve_device(o.device));
}

SamplingOptions sampling_options(const BenchOptions& o, const c10::Device& device) {
  SamplingOptions s;
  const auto budget =
      std::chrono::duration_cast<Nanoseconds>(std::chrono::duration<double>(o.time_s));
  s.time_budget = budget;
  s.warmup_budget = budget;
  s.target_relative_ci = o.target_relative_ci;
  s.stop_when_a_call_exceeds_budget = o.stop_when_a_call_exceeds_time;
  s.stop_when_decided = o.stop_when_decided;
  if (device.is_cuda()) s.min_block_time = std::max(s.min_block_time, kAsynchronousDeviceMinBlockTime);
  return s;
}

// The batch describes the workload, not a setting under comparison: --vs uses A's batch unless it
// names its own ("--batch 8 --vs baseline" is the baseline at batch 8).
BenchOptions with_shared_batch(BenchOptions options) {
  if (options.vs && !options.vs->get("batch"))
    if (auto batch = options.config.get("batch")) options.vs->set("batch", *batch);
  return options;
}

WorkloadDescription describe(const BenchOptions& options) {
  validate(options);
  const Session session = open_session(options);
  Workload w = load_workload(session);
  WorkloadDescription d;
  d.model = session.source->name();
  d.inputs = inputs_text(session, w);
  d.input_source = session.input_source;
  d.traits = describe_workload(w, session.spec == std::nullopt,
                               session.source->program_signature());
  d.traits.caller_module = !options.python_module.empty();
  return d;
}

std::string reference_batch(const BenchOptions& options, const Configuration& config) {
  if (!options.inputs_file.empty() && !holds_input_samples(options.inputs_file)) return "n/a";
  return config.get("batch").value_or("1");
}

namespace {

void write_pickle(const c10::IValue& value, const std::string& path, const std::string& what) {
  const auto bytes = torch::jit::pickle_save(value);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw RuntimeFailure("could not write the " + what + " file '" + path + "'");
}

}  // namespace

void save_reference(const BenchOptions& options, const std::string& batch,
                    const std::string& path, const std::string& inputs_path) {
  validate(options);
  const Session session = open_session(options);
  std::vector<at::Tensor> inputs;
  const Reference ref = compute_reference(session, batch, options.count_flops,
                                          inputs_path.empty() ? nullptr : &inputs);
  c10::List<at::Tensor> outputs;
  for (const auto& t : ref.outputs) outputs.push_back(t);
  write_pickle(c10::ivalue::Tuple::create(
                   {c10::IValue(outputs), c10::IValue(static_cast<std::int64_t>(ref.flops_per_sample))}),
               path, "reference");
  if (!inputs_path.empty())
    write_pickle(c10::ivalue::Tuple::create(std::vector<c10::IValue>(inputs.begin(), inputs.end())),
                 inputs_path, "inputs");
}

std::optional<SavedStream> save_stream(const BenchOptions& options,
                                       const ResolvedConfiguration& config, const std::string& path,
                                       const std::string& check_path) {
  if (!varies_in_size(options)) return std::nullopt;
  const Session session = open_session(options);
  if (session.dims.empty()) return std::nullopt;
  StreamRecipe recipe = stream_recipe_of(session);
  // The stream the C++ runtimes' finish_stream builds for the configuration: its one policy.
  recipe.policy = stream_policy_of(config, recipe.policy);
  const ShapeStream stream = build_stream(recipe);
  // A tuple of tuples: torch.load's weights-only unpickler takes those, not a generic list.
  // Only the timed batches travel: the figures are the whole stream's.
  std::vector<c10::IValue> batches;
  for (const std::size_t b : stream.timed)
    batches.emplace_back(c10::ivalue::Tuple::create(stream.batches[b].inputs));
  write_pickle(c10::ivalue::Tuple::create(std::move(batches)), path, "stream");
  SavedStream saved{figures_of(stream, recipe), padding_check_slots(stream)};
  // Each checked sample with its padded batch (which need not be a timed one).
  std::vector<c10::IValue> checks;
  for (const auto& slot : saved.check_slots)
    checks.emplace_back(c10::ivalue::Tuple::create(
        {c10::ivalue::Tuple::create(stream.batches[slot.batch].inputs),
         c10::ivalue::Tuple::create(unpadded_sample(stream, recipe, slot))}));
  write_pickle(c10::ivalue::Tuple::create(std::move(checks)), check_path, "padding check");
  return saved;
}

std::string BenchResult::invalid_reason() const {
  const auto of = [](const Measurement& m, const std::string& side) -> std::string {
    if (!m.valid) return side + m.invalid_reason;
    if (!m.inconclusive_reason.empty()) return side + m.inconclusive_reason;
    return "";
  };
  if (measurement) return of(*measurement, "");
  if (!comparison) return "no measurement";
  for (const auto& reason : {of(comparison->a, "A: "), of(comparison->b, "B: ")})
    if (!reason.empty()) return reason;
  if (comparison->stop != StopReason::kConfidenceReached &&
      comparison->stop != StopReason::kDecided)
    return fmt::format(
        "stopping rule not met: the ratio's 95% CI is ±{:.2f}% after {} rounds (raise --time "
        "or --target-ci)",
        comparison->speedup.relative_half_width * 100, comparison->speedup.rounds);
  return "";
}

struct BenchSide::Impl {
  std::shared_ptr<const Session> session;
  std::shared_ptr<const Reference> reference;
  std::unique_ptr<Prepared> prepared;
  SamplingOptions sampling;
  TimeSource* time = nullptr;
  std::map<std::string, std::string> process;  // worker knobs as confirmed here
  // Per timed block, in order: iterations and the minor page faults they caused.
  std::vector<std::pair<std::size_t, std::int64_t>> blocks;
  bool peak_reset = true;
  TimedRun run;
};

namespace {

std::unique_ptr<BenchSide::Impl> make_side(std::shared_ptr<const Session> session,
                                           std::shared_ptr<const Reference> reference,
                                           const Configuration& config,
                                           const SamplingOptions& sampling, TimeSource& time) {
  auto impl = std::make_unique<BenchSide::Impl>();
  impl->session = std::move(session);
  impl->reference = std::move(reference);
  impl->sampling = sampling;
  impl->time = &time;
  impl->prepared = prepare(*impl->session, config, time);
  // Worker knobs were set when this process started: check that they took, before timing.
  impl->process = confirm_worker_knobs(impl->prepared->config);
  BenchSide::Impl* side = impl.get();
  const TimedRun local = impl->prepared->run;
  impl->run.enter = [side, local] {
    side->peak_reset = reset_peaks(side->prepared->workload.device);
    local.enter();
  };
  impl->run.exit = local.exit;
  impl->run.block = [side, local](std::size_t iterations) {
    const std::int64_t faults = minor_page_faults();
    const auto start = side->time->now();
    for (std::size_t i = 0; i < iterations; ++i) local.iterate();
    local.synchronize();
    const Nanoseconds elapsed = side->time->now() - start;
    side->blocks.emplace_back(iterations, minor_page_faults() - faults);
    return elapsed;
  };
  return impl;
}

}  // namespace

BenchSide::BenchSide(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

BenchSide::BenchSide(const BenchOptions& requested, const Configuration& config,
                     TimeSource& time) {
  validate(requested);
  BenchOptions options = requested;
  options.config = config;
  auto session = std::make_shared<Session>(open_session(options));
  const std::string batch = reference_batch(options, config);
  const auto file = options.reference_files.find(batch);
  auto reference = std::make_shared<Reference>(
      file != options.reference_files.end() ? load_reference(file->second)
                                            : compute_reference(*session, batch, options.count_flops));
  impl_ = make_side(std::move(session), std::move(reference), config, sampling_options(options),
                    time);
}

BenchSide::~BenchSide() = default;

const TimedRun& BenchSide::run() const { return impl_->run; }

const ResolvedConfiguration& BenchSide::configuration() const { return impl_->prepared->config; }

Measurement BenchSide::finish(const SampleSet& samples, bool paired) {
  // Steady state: the blocks after warm-up (the first warmup.iterations blocks of this side).
  std::size_t iterations = 0;
  std::int64_t faults = 0;
  for (std::size_t i = samples.warmup.iterations; i < impl_->blocks.size(); ++i) {
    iterations += impl_->blocks[i].first;
    faults += impl_->blocks[i].second;
  }
  const double per_iteration =
      iterations > 0 ? static_cast<double>(faults) / static_cast<double>(iterations) : 0;
  Measurement m = torchperf::finish(*impl_->session, *impl_->prepared, samples, *impl_->reference,
                                    per_iteration, impl_->sampling, paired);
  m.process = impl_->process;
  m.peak_memory_reset = impl_->peak_reset;
  if (!impl_->peak_reset)
    m.warnings.push_back("peak memory could not be reset: it includes work before this run");
  return m;
}

BenchResult run_bench(const BenchOptions& requested, TimeSource& time,
                      const BenchProgress& progress) {
  validate(requested);
  const BenchOptions options = with_shared_batch(requested);
  if (options.vs) {
    const auto differences = process_state_differences(options.config, *options.vs);
    if (!differences.empty())
      throw UsageError("the two sides differ in process state (" + differences.front() +
                       "): each must run in its own process (torchperf bench does this; "
                       "run_bench cannot)");
  }
  BenchResult result;
  result.environment = capture_environment();
  auto session = std::make_shared<const Session>(open_session(options));
  const SamplingOptions sampling = sampling_options(options);
  Sampler sampler(time, sampling);

  std::map<std::string, std::shared_ptr<const Reference>> references;
  const auto reference_for = [&](const Configuration& c) {
    // The batch each side uses decides its reference.
    const std::string batch = reference_batch(options, c);
    auto it = references.find(batch);
    if (it == references.end()) {
      const auto file = options.reference_files.find(batch);
      if (file != options.reference_files.end()) {
        it = references.emplace(batch, std::make_shared<Reference>(load_reference(file->second)))
                 .first;
      } else {
        if (progress) progress("reference", 0);
        it = references
                 .emplace(batch, std::make_shared<Reference>(
                                     compute_reference(*session, batch, options.count_flops)))
                 .first;
      }
    }
    return it->second;
  };
  const auto report = [&](double f) {
    if (progress) progress("warm-up and measuring", f);
  };

  if (!options.vs) {
    auto impl = make_side(session, reference_for(options.config), options.config, sampling, time);
    impl->sampling = against_leader(sampling, options.leader_samples_per_s,
                                    samples_per_call(impl->prepared->workload));
    Sampler single(time, impl->sampling);
    BenchSide side(std::move(impl));
    const SampleSet samples = naming_out_of_memory(
        *session, reference_batch(options, options.config),
        [&] { return single.measure(side.run(), report); });
    result.measurement = side.finish(samples, false);
    return result;
  }

  BenchSide a(make_side(session, reference_for(options.config), options.config, sampling, time));
  BenchSide b(make_side(session, reference_for(*options.vs), *options.vs, sampling, time));
  const PairedSampleSet paired = naming_out_of_memory(
      *session, reference_batch(options, options.config) + " (and its --vs side)",
      [&] { return sampler.measure_paired(a.run(), b.run(), report); });
  result.comparison = compare_sides(a.finish(paired.a, true), b.finish(paired.b, true), paired,
                                    false);
  for (auto* m : {&result.comparison->a, &result.comparison->b})
    m->warnings.push_back("peak memory is of the process holding both configurations");
  return result;
}

Comparison compare_sides(Measurement a, Measurement b, const PairedSampleSet& paired,
                         bool separate_processes) {
  Comparison c;
  c.a = std::move(a);
  c.b = std::move(b);
  c.speedup = paired.speedup_estimate;
  c.stop = paired.stop;
  c.separate_processes = separate_processes;
  if (!paired.others_cores.empty()) c.round_load = round_load(paired.others_cores);
  // Per-round ratios compare equal numbers of calls; with different batch sizes (or streams'
  // timed passes of different weights), compare samples/s.
  if (c.a.samples_per_call() != c.b.samples_per_call())
    c.speedup = scaled(c.speedup, c.a.samples_per_call() / c.b.samples_per_call());
  c.verdict = verdict_of(c.speedup);
  return c;
}

c10::Device resolve_device(const std::string& requested) {
  if (requested == "auto")
    return compat::cuda_available() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  c10::Device device(c10::kCPU);
  try {
    device = c10::Device(requested);
  } catch (const c10::Error&) {
    throw UsageError("--device: expected auto, cpu, cuda or cuda:N, got '" + requested + "'");
  }
  if (device.is_cuda() && !compat::cuda_available())
    throw UsageError(
        "--device " + requested + ": no CUDA device is available (this LibTorch has CUDA " +
        (compat::cuda_device_count() == 0 ? "off or no GPU" : "but no usable device") + ")");
  if (device.is_cuda() && !device.has_index()) device = c10::Device(c10::kCUDA, 0);
  if (device.is_cuda() && device.index() >= compat::cuda_device_count())
    throw UsageError("--device " + requested + ": there are " +
                     std::to_string(compat::cuda_device_count()) +
                     " CUDA device(s), numbered from 0");
  if (!device.is_cpu() && !device.is_cuda())
    throw UsageError("--device: expected auto, cpu, cuda or cuda:N, got '" + requested + "'");
  return device;
}

ConfiguredWorkload open_configured_workload(const BenchOptions& options,
                                            const RemoteModelMaker& remote) {
  validate(options);
  const Session s = open_session(options);
  ConfiguredWorkload c;
  c.model_name = s.source->name();
  c.workload = load_workload(s);
  const WorkloadTraits traits =
      describe_workload(c.workload, s.spec == std::nullopt, s.source->program_signature());
  c.config = resolve(options.config, traits);
  const Runtime& runtime = runtime_of(c.config, traits);
  load_runtime_form(s, runtime, traits, c.workload);
  const bool elsewhere = runtime.worker() != RuntimeWorker::kCpp && remote;
  if (elsewhere)
    shape_inputs(c.config, c.workload);
  else
    apply_configuration(c.config, runtime, c.workload);
  const WorkloadTraits view = runtime.view(traits);
  c.batch_min = view.dynamic_batch ? std::max<long long>(1, view.batch_min) : view.default_batch;
  c.batch_max = view.dynamic_batch ? view.batch_max : view.default_batch;
  // The batch knob re-made the inputs from the spec; the spec's dtypes are what a client sends.
  // A stream's pass is not a call: a served call is one batch of the configuration's.
  const auto batch =
      c.workload.stream_recipe ? c.workload.stream_recipe->policy.batch : batch_of(c.workload);
  c.workload.stream.reset();
  const auto given = !s.dims.empty() ? typical_inputs(stream_recipe_of(s), batch)
                     : s.spec       ? make_inputs(*s.spec, batch, s.seed)
                                    : s.file_inputs;
  for (const auto& v : given) c.given_inputs.push_back(v.toTensor());
  if (elsewhere) {
    // What runs elsewhere is fed what a client sends, on the CPU: its runtime converts them.
    c.workload.inputs.assign(given.begin(), given.end());
    c.workload.device = c10::Device(c10::kCPU);
    c.workload.model = remote(c.config, traits, c.workload);
  }
  if (s.spec)
    for (const auto& t : s.spec->tensors) {
      std::vector<std::int64_t> longest, shortest;
      for (const auto& name : t.dim_names) {
        std::int64_t l = 0, m = 0;
        for (const auto& d : s.dims)
          if (d.name == name) {
            l = d.distribution.max;
            m = d.distribution.min;
          }
        longest.push_back(l);
        shortest.push_back(m);
      }
      c.longest.push_back(std::move(longest));
      c.shortest.push_back(std::move(shortest));
      c.dim_names.push_back(t.dim_names);
    }
  return c;
}

}  // namespace torchperf

#include "torchperf/worker/python_worker.h"

#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/script.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "torchperf/bench/measurement_parts.h"
#include "torchperf/compat/torch_error.h"
#include "torchperf/config/apply.h"
#include "torchperf/config/configuration.h"
#include "torchperf/error.h"
#include "torchperf/measure/environment.h"
#include "torchperf/feed/inputs.h"
#include "torchperf/models/model.h"
#include "torchperf/models/python_side.h"
#include "torchperf/models/aoti_package.h"
#include "torchperf/process/watched_child.h"
#include "torchperf/runtime/runtime.h"
#include "torchperf/worker/protocol.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

std::vector<c10::IValue> read_inputs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return torch::jit::pickle_load(bytes).toTupleRef().elements().vec();
  } catch (const std::exception& e) {
    throw RuntimeFailure("the inputs file '" + path + "' could not be read (" +
                         compat::concise_error_message(e.what()) + ")");
  }
}

// The model as Python loads it: an AOTInductor package (Python's loader runs it), the caller's
// own module (saved by the Python API), a program (a .pt2, or a built-in's, exported from its
// Python definition) or a TorchScript file.
std::pair<std::string, std::string> python_model(const BenchOptions& options, const Runtime& runtime,
                                                 const ResolvedConfiguration& config,
                                                 const WorkloadTraits& traits) {
  const Artefact artefact = runtime.artefact(
      [&](const std::string& knob) { return config.value(knob); }, runtime.view(traits));
  if (artefact.kind == ArtefactKind::kPackage) {
    // Compiled before the point by the sweep (the cache), or here, as the C++ runtime would.
    const std::string program = open_model(options.model)->program_path();
    std::string package = cached_aoti_package(program, artefact.package);
    if (package.empty())
      package = ensure_aoti_package(program, artefact.package,
                                    within(options.compile_timeout_s, options.memory_cap_bytes))
                    .path;
    return {"package", fs::absolute(package).string()};
  }
  // A built-in's program was exported at one length; a stream of lengths runs its Python
  // definition, built as its forms were (so with the same weights).
  if (runtime.form(traits) == ModelForm::kProgram && varies_in_size(options) &&
      options.model.rfind("builtin:", 0) == 0)
    return {"builtin", options.model.substr(8) + "@0"};  // build_builtin's weights: seed 0
  if (runtime.form(traits) == ModelForm::kProgram && !options.python_module.empty() &&
      options.python_module != BenchOptions::kProgramStandsIn)
    return {"module", fs::absolute(options.python_module).string()};
  if (runtime.form(traits) == ModelForm::kProgram)
    return {"program", fs::absolute(open_model(options.model)->program_path()).string()};
  return {"torchscript", fs::absolute(options.model).string()};
}

// Inductor's caches (FX graphs, autotuning, Triton kernels) per program, in torchperf's cache:
// every worker of a tune, and later tunes, find what the first compiled. A folder the user
// names with TORCHINDUCTOR_CACHE_DIR is theirs to keep.
void share_inductor_cache(ChildEnvironment& environment, const std::string& program) {
  if (const char* set = std::getenv("TORCHINDUCTOR_CACHE_DIR"); set && *set) return;
  environment["TORCHINDUCTOR_CACHE_DIR"] =
      (fs::path(torchperf_cache_dir()) / "inductor" / archive_fingerprint(program).substr(0, 16))
          .string();
}

// The allocator asked for is the one the Python worker's loader mapped, as the C++ worker confirms
// its own from inside: a preload that did not take is an error, never a silent glibc.
void confirm_allocator(const ResolvedKnob& allocator,
                       const std::map<std::string, std::string>& process) {
  if (!allocator.applicable) return;
  const auto env = find_knob("allocator").environment(allocator.value);
  const auto preload = env.find("LD_PRELOAD");
  if (preload == env.end()) return;  // glibc, glibc-tuned: the environment is the setting
  std::string library =
      fs::path(preload->second.substr(0, preload->second.find(':'))).filename().string();
  if (const auto so = library.find(".so"); so != std::string::npos) library.resize(so + 3);
  const auto shown = process.find("allocator");
  if (shown == process.end() || shown->second.find(library) == std::string::npos)
    throw ConfigError("allocator=" + allocator.value + ": " + library +
                      " is not loaded in the Python worker (it runs on " +
                      (shown == process.end() ? std::string("an allocator it did not name")
                                              : shown->second) +
                      ")");
}

// What the worker's ready reply says of the side, into its measurement's fixed fields.
void read_ready(Measurement& m, const PythonSideReady& ready, const std::string& model_kind,
                const std::string& model, const ResolvedKnob& allocator) {
  m.setup_ms = ready.setup_ms;
  m.compile_s = ready.compile_s;
  // A graph an earlier side of a shared worker compiled is a cache hit: no compile is paid.
  m.compile_cache_hit = ready.compile_reused;
  if (model_kind == "package") {
    // Compiled before the point (its cost is the package's, reported apart): apply loads it.
    m.package = model;
    m.compile_s = 0;
    m.compile_cache_hit = true;
  }
  if (m.stream) {
    m.stream->warm_s = ready.stream_warm_s;
    m.stream->warm_graphs = ready.stream_graphs;
  }
  m.graph_breaks = ready.graph_break_count;
  m.graph_break_reasons = ready.graph_break_reasons;
  m.rss_before_bytes = ready.rss_before_bytes;
  m.process = ready.process;
  confirm_allocator(allocator, ready.process);
  if (ready.graph_break_count > 0)
    m.warnings.push_back(fmt::format(
        "torch.compile broke the graph {} time(s){}: each break runs Python between compiled "
        "pieces",
        ready.graph_break_count,
        ready.graph_break_reasons.empty() ? "" : " (first: " + ready.graph_break_reasons[0] + ")"));
}

}  // namespace

PythonSideRequest python_side_request(const BenchOptions& options,
                                      const ResolvedConfiguration& config,
                                      const WorkloadTraits& traits) {
  const Runtime& runtime = runtime_of(config, traits);
  PythonSideRequest side;
  std::tie(side.model_kind, side.model) = python_model(options, runtime, config, traits);
  side.graph = config.value("graph");
  side.precision = config.value("precision");
  side.format = config.knob("format").applicable ? config.value("format") : "contiguous";
  side.grad = config.value("grad");
  side.threads = std::stoll(config.value("threads"));
  side.interop_threads = 0;
  side.device = resolve_device(options.device).str();
  side.cudnn_benchmark = config.value("cudnn_benchmark");
  side.tf32 = config.value("tf32");
  side.calibration = options.calibration_file;
  return side;
}

ChildEnvironment python_side_environment(const BenchOptions& options,
                                         const ResolvedConfiguration& config,
                                         const Configuration& requested,
                                         const WorkloadTraits& traits) {
  ChildEnvironment environment = with_python_path(worker_environment(requested));
  if (runtime_of(config, traits).form(traits) == ModelForm::kProgram)
    share_inductor_cache(environment, open_model(options.model)->program_path());
  return environment;
}

std::string compile_artifacts_path(const std::string& log_dir, const std::string& log_prefix) {
  return (fs::absolute(log_dir) / (log_prefix + ".compile_cache.bin")).string();
}

SamplingOptions python_sampling(SamplingOptions sampling) {
  sampling.min_block_time = std::max(sampling.min_block_time, kPythonWorkerMinBlockTime);
  return sampling;
}

std::string inputs_beside(const std::string& reference_path) {
  return reference_path + ".inputs.pt";
}

// A worker of its own, or (a tune's brief point) one of the pool's for its process state.
std::unique_ptr<WorkerSession> PythonSide::start_worker(const WorkerRun& run,
                                                        const ChildEnvironment& environment) {
  const std::vector<std::string> args{"-m", "torchperf.worker"};
  if (!run.python_pool)
    return std::make_unique<WorkerSession>(python_interpreter(), environment, run.limits, log_,
                                           run.tick, args);
  pool_ = run.python_pool;
  if (auto worker = pool_->take(pool_key_)) return worker;
  log_ = run.log_dir + "/python-shared-" + std::to_string(pool_->next_number()) + ".log";
  return std::make_unique<WorkerSession>(python_interpreter(), environment, run.limits, log_,
                                         run.tick, args);
}

PythonSide::PythonSide(const BenchOptions& options, const Configuration& requested,
                       const WorkerRun& run, const std::string& name, const BenchProgress& progress,
                       PythonSide* host)
    : options_(options) {
  const WorkloadDescription description = describe(options);
  config_ = resolve(requested, description.traits);
  const Runtime& runtime = runtime_of(config_, description.traits);
  if (runtime.worker() != RuntimeWorker::kPython)
    throw UsageError("a python side's configuration runs in " + runtime.label());
  fs::create_directories(run.log_dir);
  dir_ = fs::absolute(run.log_dir).string();
  tag_ = std::to_string(::getpid()) + "-" + name;

  // The reference and the inputs it came from, so that Python runs on the same tensors.
  const std::string batch = reference_batch(options, requested);
  std::string reference, inputs;
  if (const auto given = options.reference_files.find(batch);
      given != options.reference_files.end() && fs::exists(inputs_beside(given->second))) {
    reference = given->second;
    inputs = inputs_beside(reference);
  } else {
    if (progress) progress("reference", 0);
    reference = dir_ + "/python-reference-" + tag_ + ".pt";
    inputs = inputs_beside(reference);
    BenchOptions at_batch = options;
    at_batch.config = requested;
    save_reference(at_batch, batch, reference, inputs);
  }
  expected_ = load_saved_outputs(reference);
  const std::vector<c10::IValue> input_values = read_inputs(inputs);

  PythonSideRequest side = python_side_request(options, config_, description.traits);
  side.inputs = inputs;

  base_.model = description.model;
  base_.inputs = describe_inputs(input_values);
  base_.input_source = description.input_source;
  base_.device = side.device;
  base_.batch = input_values.empty() || !input_values[0].isTensor() ||
                        input_values[0].toTensor().dim() == 0
                    ? 1
                    : input_values[0].toTensor().size(0);
  base_.configuration = config_;
  base_.flops_per_sample = expected_.flops_per_sample;
  if (varies_in_size(options)) {
    const std::string stream = dir_ + "/python-stream-" + tag_ + ".pt";
    const std::string check = dir_ + "/python-padding-check-" + tag_ + ".pt";
    if (auto saved = save_stream(options, config_, stream, check)) {
      base_.stream = saved->figures;
      side.stream = stream_file_ = stream;
      if (options.check_padding) {
        check_slots_ = saved->check_slots;
        check_file_ = check;
      }
      base_.batch = base_.stream->samples;
    }
  }

  const ChildEnvironment environment =
      python_side_environment(options, config_, requested, description.traits);
  // What torch.compile compiled, saved beside the log: tune keeps its winner's for apply.
  side.compile_artifacts = compile_artifacts_path(run.log_dir, run.log_prefix);
  log_ = run.log_dir + "/" + run.log_prefix + "-" + name + ".log";
  name_ = "python side " + name + " (" + config_.to_string() + ")";
  timeout_s_ = run.limits.time_limit_s;
  // The process state: the environment (the compile artefacts' file travels with each side), the
  // threads, and the backend flags a side sets process-wide (cuDNN's benchmark, TF32), so that
  // a pair's two sides never share a worker under one side's flags, nor a point inherit the last
  // point's ("default" TF32 leaves the flag as it finds it).
  // An engine's runtime is process state too: its thread pool (ONNX Runtime's threads spin
  // between calls) must not share a process with a side timed in PyTorch's (issue 84's probe: a
  // 2-layer MLP read 480x over eval()+inference_mode in one round of a shared worker).
  pool_key_ = python_interpreter() + " runtime=" + runtime.family() +
              " threads=" + config_.value("threads") +
              " cudnn_benchmark=" + config_.value("cudnn_benchmark") +
              " tf32=" + config_.value("tf32");
  for (const auto& [var, value] : environment) pool_key_ += " " + var + "=" + value;
  if (host && host->pool_key_ == pool_key_) {
    // A pair of one process state in one worker: starting a second would compile again what the
    // sweep compiled in the first (18 s a side on bench 23's encoder); the blocks alternate.
    session_ = host->session_;
    slot_ = host->slot_ + 1;
    log_ = host->log_;
  } else {
    worker_ = start_worker(run, environment);
    session_ = worker_.get();
  }
  side.slot = slot_;
  if (progress) progress("loading and compiling in Python", 0);
  const auto ready = from_reply<PythonSideReady>(ask(to_request(side), "preparing"), "python-side");
  read_ready(base_, ready, side.model_kind, side.model, config_.knob("allocator"));
}

std::unique_ptr<WorkerSession> PythonWorkerPool::take(const std::string& key) {
  while (true) {
    const auto it = idle_.find(key);
    if (it == idle_.end()) return nullptr;
    std::unique_ptr<WorkerSession> worker = std::move(it->second);
    idle_.erase(it);
    if (worker->running()) return worker;
  }
}

void PythonWorkerPool::give_back(const std::string& key, std::unique_ptr<WorkerSession> worker) {
  if (worker && worker->running() && idle_.count(key) < kIdlePerKey)
    idle_.emplace(key, std::move(worker));
}

PythonSide::~PythonSide() {
  // A worker whose side finished goes back for the next brief point; one that failed ends.
  if (pool_ && finished_) pool_->give_back(pool_key_, std::move(worker_));
  std::error_code ignored;
  if (!stream_file_.empty()) fs::remove(stream_file_, ignored);
  if (!check_file_.empty()) fs::remove(check_file_, ignored);
}

nlohmann::json PythonSide::ask(const nlohmann::json& request, const std::string& doing) {
  return ask_side(*session_, request, timeout_s_, name_, log_, doing);
}

TimedRun PythonSide::timed_run(WorkerSession* peer) {
  TimedRun timed;
  // The peer (the other side of a comparison) is stopped while this side is timed, unless it is
  // this side's own worker.
  if (peer == session_) peer = nullptr;
  timed.block = [this, peer](std::size_t iterations) {
    if (peer) peer->pause();
    struct Resume {
      WorkerSession* w;
      ~Resume() {
        if (w) w->resume();
      }
    } resume{peer};
    const auto reply = from_reply<PythonBlockReply>(
        ask(to_request(PythonBlockRequest{slot_, iterations}), "timing"), "a block");
    blocks_.emplace_back(iterations, reply.minor_faults);
    return Nanoseconds(static_cast<std::int64_t>(std::llround(reply.ns)));
  };
  return timed;
}

Measurement PythonSide::finish(const SampleSet& samples, const SamplingOptions& sampling,
                               bool paired) {
  const std::string outputs = dir_ + "/python-outputs-" + tag_ + ".pt";
  // The padding check's outputs: PREFIX-I-padded.pt (sample I's batch) and PREFIX-I-alone.pt.
  const std::string checked = check_file_.empty() ? "" : dir_ + "/python-padding-" + tag_;
  const auto finished = from_reply<PythonFinishReply>(
      ask(to_request(PythonFinishRequest{outputs, check_file_, checked, slot_}), "finishing"),
      "finish");
  const SavedOutputs produced = load_saved_outputs(outputs, "outputs file");
  std::error_code ignored;
  fs::remove(outputs, ignored);
  std::vector<PaddedRun> runs;
  for (std::size_t i = 0; i < check_slots_.size() && !checked.empty(); ++i) {
    const std::string stem = checked + "-" + std::to_string(i);
    runs.push_back({check_slots_[i], load_saved_outputs(stem + "-padded.pt", "padding check").outputs,
                    load_saved_outputs(stem + "-alone.pt", "padding check").outputs});
    fs::remove(stem + "-padded.pt", ignored);
    fs::remove(stem + "-alone.pt", ignored);
  }

  Measurement m = base_;
  m.peak_memory_bytes = finished.peak_memory_bytes;
  m.peak_memory_reset = finished.peak_memory_reset;
  if (!finished.peak_memory_reset)
    m.warnings.push_back("peak memory could not be reset: it includes the Python worker's set-up");
  std::size_t iterations = 0;
  std::int64_t faults = 0;
  for (std::size_t i = samples.warmup.iterations; i < blocks_.size(); ++i) {
    iterations += blocks_[i].first;
    faults += blocks_[i].second;
  }
  add_page_faults(m, iterations ? static_cast<double>(faults) / static_cast<double>(iterations)
                                : 0);
  add_timing(m, samples, sampling, paired);
  add_output_check(m, expected_.outputs, produced.outputs);
  add_padding_check(m, runs);
  finished_ = true;
  return m;
}

BenchResult measure_python_in_worker(const BenchOptions& options, const WorkerRun& run,
                                     TimeSource& time, const BenchProgress& progress) {
  validate(options);
  PythonSide side(options, options.config, run, "python", progress);
  const SamplingOptions sampling = against_leader(python_sampling(sampling_options(options)),
                                                  options.leader_samples_per_s,
                                                  side.samples_per_call());
  Sampler sampler(time, sampling);
  const SampleSet samples = sampler.measure(side.timed_run(nullptr), [&](double f) {
    if (progress) progress("warm-up and measuring", f);
  });
  BenchResult result;
  result.environment = capture_environment();
  result.measurement = side.finish(samples, sampling, false);
  return result;
}

}  // namespace torchperf

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
#include "torchperf/models/inputs.h"
#include "torchperf/models/model.h"
#include "torchperf/models/python_side.h"
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

// The model as Python loads it: a program or a TorchScript file; a built-in saved as one.
std::pair<std::string, std::string> python_model(const BenchOptions& options,
                                                 const WorkloadTraits& traits,
                                                 const std::string& dir) {
  if (traits.exported_program) return {"program", fs::absolute(options.model).string()};
  if (options.model.rfind("builtin:", 0) != 0)
    return {"torchscript", fs::absolute(options.model).string()};
  std::string name = options.model.substr(8);
  for (char& c : name)
    if (c == ':' || c == '/') c = '-';
  const std::string path = dir + "/builtin-" + name + ".pt";
  if (!fs::exists(path)) {
    auto model = open_model(options.model)->load();
    model->as_torchscript()->module().save(path);
  }
  return {"torchscript", path};
}

}  // namespace

std::string inputs_beside(const std::string& reference_path) {
  return reference_path + ".inputs.pt";
}

BenchResult measure_python_in_worker(const BenchOptions& options, const WorkerRun& run,
                                     TimeSource& time, const BenchProgress& progress) {
  validate(options);
  const WorkloadDescription description = describe(options);
  const ResolvedConfiguration config = resolve(options.config, description.traits);
  if (config.value("runtime") != "python")
    throw UsageError("measure_python_in_worker: the configuration's runtime is " +
                     config.value("runtime") + ", not python");
  fs::create_directories(run.log_dir);
  const std::string dir = fs::absolute(run.log_dir).string();
  const std::string tag = std::to_string(::getpid());

  // The reference and the inputs it came from, so that Python runs on the same tensors.
  const std::string batch = reference_batch(options, options.config);
  std::string reference, inputs;
  if (const auto given = options.reference_files.find(batch);
      given != options.reference_files.end() && fs::exists(inputs_beside(given->second))) {
    reference = given->second;
    inputs = inputs_beside(reference);
  } else {
    if (progress) progress("reference", 0);
    reference = dir + "/python-reference-" + tag + ".pt";
    inputs = inputs_beside(reference);
    save_reference(options, batch, reference, inputs);
  }
  const SavedOutputs expected = load_saved_outputs(reference);
  const std::vector<c10::IValue> input_values = read_inputs(inputs);

  const auto [model_kind, model] = python_model(options, description.traits, dir);
  PythonSideRequest side;
  side.model_kind = model_kind;
  side.model = model;
  side.inputs = inputs;
  side.graph = config.value("graph");
  side.precision = config.value("precision");
  side.format = config.knob("format").applicable ? config.value("format") : "contiguous";
  side.grad = config.value("grad");
  side.threads = std::stoll(config.value("threads"));
  side.interop_threads = 0;
  side.device = resolve_device(options.device).str();

  ChildEnvironment environment = worker_environment(options.config);
  environment["PYTHONPATH"] = python_package_dir();
  const std::string log = run.log_dir + "/" + run.log_prefix + "-python.log";
  const std::string name = "python side (" + config.to_string() + ")";
  WorkerSession worker(python_interpreter(), environment, run.limits, log, run.tick,
                       {"-m", "torchperf.worker"});
  const auto ask = [&](const nlohmann::json& request, const std::string& doing) {
    return ask_side(worker, request, run.limits.timeout_s, name, log, doing);
  };
  if (progress) progress("loading and compiling in Python", 0);
  const auto ready = from_reply<PythonSideReady>(ask(to_request(side), "preparing"), "python-side");

  // Minor page faults of each block, to count the steady state's after warm-up.
  std::vector<std::pair<std::size_t, std::int64_t>> blocks;
  TimedRun timed;
  timed.block = [&](std::size_t iterations) {
    const auto reply =
        from_reply<PythonBlockReply>(ask(to_request(BlockRequest{iterations}), "timing"), "a block");
    blocks.emplace_back(iterations, reply.minor_faults);
    return Nanoseconds(static_cast<std::int64_t>(std::llround(reply.ns)));
  };
  const SamplingOptions sampling = sampling_options(options);
  Sampler sampler(time, sampling);
  const SampleSet samples = sampler.measure(timed, [&](double f) {
    if (progress) progress("warm-up and measuring", f);
  });
  const std::string outputs = dir + "/python-outputs-" + tag + ".pt";
  const auto finished = from_reply<PythonFinishReply>(
      ask(to_request(PythonFinishRequest{outputs}), "finishing"), "finish");
  const SavedOutputs produced = load_saved_outputs(outputs);
  std::error_code ignored;
  fs::remove(outputs, ignored);

  Measurement m;
  m.model = description.model;
  m.inputs = describe_inputs(input_values);
  m.input_source = description.input_source;
  m.device = side.device;
  m.batch = input_values.empty() || !input_values[0].isTensor() ||
                    input_values[0].toTensor().dim() == 0
                ? 1
                : input_values[0].toTensor().size(0);
  m.configuration = config;
  m.setup_ms = ready.setup_ms;
  m.compile_s = ready.compile_s;
  m.rss_before_bytes = ready.rss_before_bytes;
  m.peak_memory_bytes = finished.peak_memory_bytes;
  m.peak_memory_reset = finished.peak_memory_reset;
  if (!finished.peak_memory_reset)
    m.warnings.push_back("peak memory could not be reset: it includes the Python worker's set-up");
  m.process = ready.process;
  std::size_t iterations = 0;
  std::int64_t faults = 0;
  for (std::size_t i = samples.warmup.iterations; i < blocks.size(); ++i) {
    iterations += blocks[i].first;
    faults += blocks[i].second;
  }
  add_page_faults(m, iterations ? static_cast<double>(faults) / static_cast<double>(iterations)
                                : 0);
  m.flops_per_sample = expected.flops_per_sample;
  add_timing(m, samples, sampling, false);
  add_output_check(m, expected.outputs, produced.outputs);
  if (ready.graph_break_count > 0)
    m.warnings.push_back(fmt::format(
        "torch.compile broke the graph {} time(s){}: each break runs Python between compiled "
        "pieces",
        ready.graph_break_count,
        ready.graph_break_reasons.empty() ? "" : " (first: " + ready.graph_break_reasons[0] + ")"));

  BenchResult result;
  result.environment = capture_environment();
  result.measurement = std::move(m);
  return result;
}

}  // namespace torchperf

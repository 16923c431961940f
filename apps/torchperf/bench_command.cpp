#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "commands.h"
#include "config_argument.h"
#include "exit_codes.h"
#include "knob_flags.h"
#include "progress_bar.h"
#include "torchperf/bench/bench_runner.h"
#include "torchperf/bench/measurement_json.h"
#include "torchperf/config/apply.h"
#include "torchperf/config/configuration_file.h"
#include "torchperf/config/knob.h"
#include "torchperf/error.h"
#include "torchperf/measure/memory_probe.h"
#include "torchperf/report/table_writer.h"
#include "torchperf/worker/paired_workers.h"
#include "torchperf/worker/python_worker.h"
#include "torchperf/sweep/tune_options.h"
#include "python_source.h"

namespace torchperf::cli {
namespace {

struct BenchFlags {
  BenchOptions options;
  std::string config;
  std::string vs;
  // knob name -> value from its own flag
  std::shared_ptr<std::map<std::string, std::string>> knob_values =
      std::make_shared<std::map<std::string, std::string>>();
  std::vector<std::string> inputs;
  PythonSourceFlags source;
  std::string memory_cap;
  bool allow_overrun = false;
  bool json = false;
  bool quiet = false;
};

std::string join_inputs(const std::vector<std::string>& inputs) {
  std::string out;
  for (const auto& i : inputs) out += (out.empty() ? "" : ";") + i;
  return out;
}

int run(BenchFlags& flags) {
  BenchOptions options = flags.options;
  options.input_spec = join_inputs(flags.inputs);
  apply_config_argument(flags.config, options);
  options.compile_timeout_s = flags.source.compile_timeout_s;
  if (!flags.source.callable.empty()) {
    std::string stem = flags.source.callable;
    for (auto& c : stem)
      if (c == ':' || c == '/') c = '.';
    options.model = export_python_source(flags.source, options.model, options.input_spec, options.dims,
                                         stem + ".pt2", flags.quiet);
  }
  if (options.model.empty())
    throw UsageError("bench: expected a model (a torch.export .pt2, a TorchScript file or "
                     "builtin:NAME)");
  for (const auto& [knob, value] : *flags.knob_values) options.config.set(knob, value);
  if (!flags.vs.empty()) options.vs = named_or_parsed(flags.vs);
  // Issue 84's probe: samples given to calibrate nothing were accepted in silence.
  if (!options.calibration_file.empty() &&
      options.config.get("precision").value_or("") != "int8-static" &&
      (!options.vs || options.vs->get("precision").value_or("") != "int8-static"))
    throw UsageError("--calibration " + options.calibration_file + ": only precision=int8-static "
                     "calibrates, and neither side here runs it (precision=" +
                     options.config.get("precision").value_or("fp32") + ")");
  options.stop_when_a_call_exceeds_time = !flags.allow_overrun;
  options.memory_cap_bytes = flags.memory_cap.empty()   ? default_memory_cap_bytes()
                             : flags.memory_cap == "none" ? 0
                                                          : parse_size(flags.memory_cap, "--memory-cap");
  // Above the cap the run ends at once: one run keeps nothing a stop could lose, and a machine
  // that starts swapping helps no one. (Workers are watched and killed by their parent instead.)
  const MemoryWatchdog watchdog(options.memory_cap_bytes, [&](std::int64_t rss) {
    const std::string line = fmt::format(
        "torchperf: error: bench: resident memory reached {}, over the memory cap of {} "
        "(--memory-cap{}); lower --batch or raise the cap\n",
        format_bytes(rss), format_bytes(options.memory_cap_bytes),
        flags.memory_cap.empty() ? ": by default 90% of the memory available at start" : "");
    [[maybe_unused]] const auto n = ::write(STDERR_FILENO, line.data(), line.size());
    ::_exit(kResourceLimit);
  });

  ProgressBar bar(!flags.quiet && isatty(STDERR_FILENO));
  SteadyTimeSource clock;
  const auto progress = [&](const std::string& phase, double f) {
    bar.update(phase, f, options.time_s);
  };
  // Sides that differ in process state (threads, the allocator …) each get a worker process of
  // their own, and so does a configuration whose worker knobs need a fresh process.
  const bool separate =
      options.vs && !process_state_differences(options.config, *options.vs).empty();
  const bool fresh = !worker_knobs_named(options.config).empty() ||
                     (options.vs && !worker_knobs_named(*options.vs).empty());
  BenchResult result;
  if (separate || fresh) {
    validate(options);  // before any worker starts
    WorkerRun run;
    run.executable = std::filesystem::read_symlink("/proc/self/exe").string();
    std::string dir = (std::filesystem::temp_directory_path() / "torchperf-bench-XXXXXX").string();
    if (!::mkdtemp(dir.data())) throw RuntimeFailure("cannot create a folder for worker logs");
    run.log_dir = dir;
    run.limits.time_limit_s = 120 + 20 * options.time_s;  // a request: preparing, a block, finishing
    run.limits.memory_cap_bytes = options.memory_cap_bytes;
    // A side whose runtime is Python's runs in the Python worker; the rest in the C++ one.
    const bool python = worker_of(options.config) == RuntimeWorker::kPython;
    result = options.vs ? compare_in_workers(options, run, clock, progress)
             : python   ? measure_python_in_worker(options, run, clock, progress)
                        : measure_in_worker(options, run);
    std::filesystem::remove_all(dir);  // kept on failure: the error names the log
  } else {
    result = run_bench(options, clock, progress);
  }
  bar.finish();
  if (flags.json)
    std::cout << to_json(result).dump(2) << "\n";
  else
    std::cout << format_result(result);
  return result.valid() ? kSuccess : kInvalidResult;
}

}  // namespace

Runner add_bench_command(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* cmd =
      app.add_subcommand("bench", "Measure one model under one configuration (or two, with --vs)");
  cmd->add_option("model", flags->options.model,
                  "torch.export program (.pt2), TorchScript file, or builtin:NAME (see "
                  "'torchperf knobs'); may come from a --config file");
  add_python_source_flags(*cmd, flags->source);
  cmd->add_option("--input", flags->inputs,
                  "Input spec per forward argument, batch dimension excluded: 3x224x224, "
                  "'int64:128@0..30522;int64:128' (repeat or join with ';')");
  cmd->add_option("--dim", flags->options.dims,
                  "A named input dimension's sizes, one --dim per name: S=8..512 (uniform), "
                  "S=lognormal:MEDIAN:SIGMA:MIN..MAX, S=file:LENGTHS (one a line); with --input "
                  "int64:S@0..30522 each timed call runs a pass over a stream of batches whose "
                  "lengths follow it (docs/shapes.md)");
  cmd->add_option("--timed-batches", flags->options.stream_timed_batches,
                  "With --dim: the stream's batches a timed pass runs, drawn across its padded "
                  "sizes (0: every batch; a tune's brief points run 3)")
      ->default_val(kFullTimedBatches);
  cmd->add_option("--inputs-file", flags->options.inputs_file,
                  "Tensors saved with torch.save: a tensor, or a tuple/list of tensors");
  add_python_module_flags(*cmd, flags->options.calibration_file, flags->options.python_module, "");
  cmd->add_option("--config", flags->config,
                  "Configuration string, e.g. threads=2,grad=inference,graph=frozen-opt, or a "
                  "FILE.json written by report (its model and inputs apply when not given)");
  cmd->add_option(
      "--vs", flags->vs,
      "Measure interleaved against this configuration ('baseline', 'careful' = eval+no_grad, "
      "or a configuration string) and report the ratio with its CI");
  cmd->add_option("--time", flags->options.time_s,
                  "Measurement budget in seconds (with --vs: for the interleaved pair); warm-up is "
                  "capped at the same")
      ->default_val(3.0);
  cmd->add_option("--target-ci", flags->options.target_relative_ci,
                  "Stop when the median's 95% CI is within this fraction")
      ->default_val(0.01);
  cmd->add_option("--memory-cap", flags->memory_cap,
                  "Stop above this resident memory: 4G, 512M, or none (default: 90% of the "
                  "memory available at start); inputs larger than it are refused before "
                  "allocation");
  cmd->add_flag("--allow-overrun", flags->allow_overrun,
                "Measure even when one call takes longer than --time (otherwise the run stops "
                "after two such calls, INVALID)");
  cmd->add_option("--device", flags->options.device, "auto, cpu, cuda or cuda:N")
      ->default_val("auto");
  cmd->add_option("--seed", flags->options.seed, "Seed for generated inputs")->default_val(0);
  cmd->add_flag("--json", flags->json, "Print the result as JSON (docs/json-schema.md)");
  cmd->add_flag("--quiet", flags->quiet, "No progress bar");
  add_knob_flags(*cmd, inference_knobs(), flags->knob_values);
  return [cmd, flags]() -> int {
    if (!cmd->parsed()) return -1;
    return run(*flags);
  };
}

}  // namespace torchperf::cli

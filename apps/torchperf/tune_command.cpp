#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "commands.h"
#include "exit_codes.h"
#include "knob_flags.h"
#include "budget_option.h"
#include "progress_bar.h"
#include "python_source.h"
#include "report_files.h"
#include "stop_signals.h"
#include "torchperf/config/knob.h"
#include "torchperf/error.h"
#include "torchperf/report/tune_summary.h"
#include "generate_command.h"
#include "torchperf/cluster/ray_cluster.h"
#include "torchperf/sweep/tune_runner.h"
#include "torchperf/text.h"

namespace torchperf::cli {
namespace {

struct TuneFlags {
  TuneOptions options;
  std::vector<std::string> inputs;
  std::string space, objective = "throughput", accuracy, as_given, budget, point_timeout, memory_cap,
                     resume, search = "smart";
  std::map<std::string, std::string> knob_values;  // knob -> "v1,v2"
  std::string worker_exe, cluster;
  bool json = false, quiet = false, progress_lines = false;
  std::vector<CLI::Option*> experiment_flags;  // flags that define the experiment
  CLI::Option* model_opt = nullptr;
  PythonSourceFlags source;
  GenerationFlags generation;
};

// The experiment as the flags describe it (defaults where a flag is absent).
TuneOptions options_from_flags(const TuneFlags& f) {
  TuneOptions o = f.options;
  std::string joined;
  for (const auto& i : f.inputs) joined += (joined.empty() ? "" : ";") + i;
  o.workload.input_spec = joined;
  o.space = parse_space(f.space);
  for (const auto& [knob, values] : f.knob_values) {
    if (o.space.count(knob))
      throw UsageError("knob '" + knob + "' is given both by --space and by its own flag");
    for (auto& v : split(values, ','))
      if (!v.empty() &&
          std::find(o.space[knob].begin(), o.space[knob].end(), v) == o.space[knob].end())
        o.space[knob].push_back(v);
  }
  o.objective = Objective::parse(f.objective);
  o.search = search_kind_from_string(f.search);
  o.as_given = f.as_given;
  if (!f.accuracy.empty()) o.guard = AccuracyGuard::parse(f.accuracy);
  return o;
}

// A resumed tune: the journal's experiment, with the flags given now where they were given
// (tune checks that they agree with it).
TuneOptions resumed_options(const TuneFlags& f, TuneOptions o) {
  if (!o.out_dir.empty() &&
      std::filesystem::absolute(o.out_dir) != std::filesystem::absolute(f.resume))
    throw UsageError("--out " + o.out_dir + " and --resume " + f.resume +
                     " differ: a resumed sweep writes to the journal it continues");
  TuneOptions from_journal = o;
  apply_experiment_json(journal_experiment(f.resume), from_journal);
  const TuneOptions given = o;
  o = from_journal;
  if (f.model_opt->count()) o.workload.model = given.workload.model;
  for (const auto& [name, copy] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"--input", [&] { o.workload.input_spec = given.workload.input_spec; }},
           {"--inputs-file", [&] { o.workload.inputs_file = given.workload.inputs_file; }},
           {"--calibration",
            [&] { o.workload.calibration_file = given.workload.calibration_file; }},
           {"--dim", [&] { o.workload.dims = given.workload.dims; }},
           {"--python-module", [&] { o.workload.python_module = given.workload.python_module; }},
           {"--device", [&] { o.workload.device = given.workload.device; }},
           {"--seed", [&] { o.workload.seed = given.workload.seed; }},
           {"--time", [&] { o.workload.time_s = given.workload.time_s; }},
           {"--objective", [&] { o.objective = given.objective; }},
           {"--accuracy", [&] { o.guard = given.guard; }},
           {"--order-seed", [&] { o.order_seed = given.order_seed; }},
           {"--leaders", [&] { o.leaders = given.leaders; }},
           {"--search", [&] { o.search = given.search; }},
           {"--as-given", [&] { o.as_given = given.as_given; }}})
    for (auto* opt : f.experiment_flags)
      if (opt->get_name() == name && opt->count()) copy();
  bool space_given = !f.knob_values.empty();
  for (auto* opt : f.experiment_flags)
    if (opt->count() && opt->get_name() == "--space") space_given = true;
  if (space_given) o.space = given.space;
  o.out_dir = f.resume;
  o.resume = true;
  return o;
}

// The run's options from its flags: budgets, a resumed journal's, a Python source exported
// into the run's folder, the cluster's address and the worker binary.
TuneOptions resolve_options(TuneFlags& f) {
  TuneOptions o = options_from_flags(f);
  o.budget_s = budget_seconds(f.budget);
  if (!f.point_timeout.empty())
    o.point_timeout_s = parse_duration(f.point_timeout, "--point-timeout");
  if (!f.memory_cap.empty()) o.memory_cap_bytes = parse_size(f.memory_cap, "--memory-cap");
  if (!f.resume.empty()) {
    o = resumed_options(f, o);
  } else {
    if (!f.source.callable.empty()) {
      // The program is part of the run: written beside its results (an absolute path in the
      // journal, so --resume finds it from anywhere), never over another run's.
      if (o.out_dir.empty()) o.out_dir = default_out_dir(f.source.callable.substr(f.source.callable.find(':') + 1));
      if (std::filesystem::exists(std::filesystem::path(o.out_dir) / "results.jsonl"))
        throw UsageError("--out '" + o.out_dir + "' holds a tune journal already: continue it with "
                         "--resume, or choose another --out");
      o.workload.model = export_python_source(
          f.source, f.model_opt->count() ? o.workload.model : "", o.workload.input_spec, o.workload.dims,
          std::filesystem::absolute(std::filesystem::path(o.out_dir) / "model.pt2").string(), f.quiet);
    }
    if (o.workload.model.empty()) throw UsageError("tune: expected a model (or --resume DIR)");
    if (o.out_dir.empty()) o.out_dir = default_out_dir(o.workload.model);
  }
  o.workload.compile_timeout_s = f.source.compile_timeout_s;
  o.out_dir = std::filesystem::absolute(o.out_dir).lexically_normal().string();
  // The environment is the CLI's to read: the supervisor is handed the address.
  if (!f.cluster.empty()) {
    const char* variable = std::getenv("RAY_ADDRESS");
    o.cluster = ray_address_of(f.cluster, variable ? variable : "");
  }
  o.worker_executable = f.worker_exe.empty()
                            ? std::filesystem::read_symlink("/proc/self/exe").string()
                            : f.worker_exe;
  return o;
}

// What tune says while it runs: the progress bar, the plan's line, and with --progress-lines
// a JSON line per finished point or phase (at most one a second between them).
class TuneProgress {
 public:
  TuneProgress(const TuneFlags& f, ProgressBar& bar) : f_(f), bar_(bar) {}
  void operator()(const TuneStatus& s) {
    if (s.phase == "plan") {
      bar_.finish();
      if (!f_.quiet) std::cerr << "tune: " << s.message << "\n";
      return;
    }
    std::string text = s.phase == "sweeping" || s.phase == "confirming"
                           ? fmt::format("{}/{} points, {} failed{}{}", s.done, s.planned,
                                         s.failed, s.best.empty() ? "" : ", best " + s.best,
                                         s.phase == "confirming" ? ", confirming" : "")
                           : s.phase;
    bar_.show(s.fraction, text, s.eta_s);
    if (!f_.progress_lines) return;
    // A line per finished point or phase, and at most one a second between them.
    const auto now = std::chrono::steady_clock::now();
    const std::string state = fmt::format("{}/{}/{}", s.phase, s.done, s.failed);
    if (state != last_state_ || now - last_line_ >= std::chrono::seconds(1)) {
      last_state_ = state;
      last_line_ = now;
      std::cerr << nlohmann::json{{"progress",
                                   {{"phase", s.phase},
                                    {"done", s.done},
                                    {"failed", s.failed},
                                    {"planned", s.planned},
                                    {"fraction", std::min(1.0, s.fraction)},
                                    {"eta_s", s.eta_s},
                                    {"best", s.best}}}}.dump()
                << std::endl;
    }
  }

 private:
  const TuneFlags& f_;
  ProgressBar& bar_;
  std::string last_state_;
  std::chrono::steady_clock::time_point last_line_;
};

// The result on stdout, and the report written from the journal; the exit code.
int write_outputs(const TuneFlags& f, const TuneOptions& o, const TuneResult& result) {
  if (f.json)
    std::cout << to_json(result).dump(2) << "\n";
  else
    std::cout << format_tune(result);
  // The report is written from the journal, as `torchperf report OUT` would write it. A failure
  // here does not undo the sweep: its result stands, and the report can be written again. A run
  // that measured nothing has nothing to plot: no page of empty plots.
  const bool measured = std::any_of(result.points.begin(), result.points.end(), [](const auto& p) {
    return p.status != PointStatus::kFailed;
  });
  if (!measured) {
    std::cerr << "tune: no report: no point was measured\n";
    return result.winner ? kSuccess : kInvalidResult;
  }
  try {
    const std::string page = write_run_report(o.out_dir);
    std::cerr << "tune: report written to " << page << "\n";
  } catch (const std::exception& e) {
    std::cerr << "tune: ***WARNING*** the report could not be written (" << e.what()
              << "); the results are in the journal: torchperf report " << o.out_dir << "\n";
  }
  return result.winner ? kSuccess : kInvalidResult;
}

int run(TuneFlags& f) {
  if (wants_generation(f.generation, f.options.workload.model)) {
    SharedTuneFlags s;
    s.model = f.options.workload.model;
    s.from_python = f.source.callable;
    s.device = f.options.workload.device;
    s.space = f.space;
    s.accuracy = f.accuracy;
    s.budget = f.budget;
    // A generation tune resumes from the journal in its folder: --resume DIR is --out DIR.
    s.out = f.resume.empty() ? f.options.out_dir : f.resume;
    s.point_timeout = f.point_timeout;
    s.memory_cap = f.memory_cap;
    s.seed = f.options.workload.seed;
    s.knob_values = f.knob_values;
    s.json = f.json;
    s.quiet = f.quiet;
    return run_generation_tune_command(f.generation, s);
  }
  const TuneOptions o = resolve_options(f);
  std::optional<StopSignals> stop_signals(std::in_place);
  const bool bar_enabled = !f.quiet && isatty(STDERR_FILENO);
  ProgressBar bar(bar_enabled);
  if (!f.quiet) std::cerr << "tune: results go to " << o.out_dir << "/results.jsonl\n";
  SteadyTimeSource clock;
  TuneResult result;
  TuneProgress progress(f, bar);
  try {
    result = run_tune(o, clock, std::ref(progress), [] { return StopSignals::requested(); });
  } catch (...) {
    bar.finish();
    throw;
  }
  bar.finish();
  stop_signals.reset();
  return write_outputs(f, o, result);
}

}  // namespace

Runner add_tune_command(CLI::App& app) {
  auto f = std::make_shared<TuneFlags>();
  f->options.workload.time_s = 2;
  CLI::App* cmd = app.add_subcommand(
      "tune", "Sweep the space of configurations, each in its own worker, and confirm a winner");
  f->model_opt =
      cmd->add_option("model", f->options.workload.model,
                      "torch.export program (.pt2), TorchScript file, builtin:NAME, or hf:PATH (a "
                      "transformers causal LM's save_pretrained folder: text generation)");
  add_python_source_flags(*cmd, f->source);
  add_generation_flags(*cmd, f->generation);
  const auto experiment = [&](CLI::Option* opt) {
    f->experiment_flags.push_back(opt);
    return opt;
  };
  experiment(cmd->add_option("--input", f->inputs,
                             "Input spec per forward argument, batch excluded (as for bench)"));
  experiment(cmd->add_option("--dim", f->options.workload.dims,
                             "A named input dimension's sizes (as for bench): S=8..512, "
                             "S=lognormal:MEDIAN:SIGMA:MIN..MAX or S=file:LENGTHS"));
  experiment(cmd->add_option("--inputs-file", f->options.workload.inputs_file,
                             "Tensors saved with torch.save, instead of a spec"));
  experiment(cmd->add_option("--calibration", f->options.workload.calibration_file,
                             "Real samples int8-static is calibrated on, in every point's batches "
                             "(as for bench); default: each point's inputs"));
  experiment(cmd->add_option("--python-module", f->options.workload.python_module,
                             "The program's nn.Module itself, saved by the Python API "
                             "(torchperf.tune writes it): the python runtime times it instead of "
                             "the program's module"));
  experiment(cmd->add_option("--device", f->options.workload.device, "auto, cpu, cuda or cuda:N")
                 ->default_val("auto"));
  experiment(cmd->add_option("--seed", f->options.workload.seed, "Seed for generated inputs")
                 ->default_val(0));
  experiment(cmd->add_option("--space", f->space,
                             "Values to sweep, e.g. 'precision=fp32,bf16-autocast;graph=eager,"
                             "frozen-opt'; knobs not named sweep every applicable value"));
  experiment(cmd->add_option("--objective", f->objective,
                             "throughput (samples/s, default), latency (p50) or latency-p99"));
  experiment(cmd->add_option("--accuracy", f->accuracy,
                             "Guard against the fp32 reference, e.g. "
                             "'cosine>=0.999,top1>=99%,max_rel<=10%' (default), "
                             "'max_abs<=1e-3', or 'none'"));
  experiment(cmd->add_option("--time", f->options.workload.time_s,
                             "Measurement budget per point in seconds (warm-up capped at the same)")
                 ->default_val(2.0));
  experiment(cmd->add_option("--order-seed", f->options.order_seed, "Seed of the random order")
                 ->default_val(0));
  experiment(cmd->add_option("--leaders", f->options.leaders,
                             "How many leaders are re-measured head to head")
                 ->default_val(3));
  experiment(cmd->add_option("--search", f->search,
                             "smart: screen the one-knob changes briefly, explore what a fitted "
                             "model ranks best, measure the best few in full; exhaustive: every "
                             "point in full")
                 ->default_val("smart"));
  experiment(cmd->add_option("--as-given", f->as_given,
                             "The configuration your code runs today, e.g. "
                             "'runtime=python,graph=eager,grad=on': the winner is also measured "
                             "head to head against it, at the winner's batch"));
  // A named object: GCC 12 at -O3 takes a value-initialised temporary's strings for uninitialised.
  const TuneOptions defaults;
  add_budget_option(cmd, f->budget, defaults.budget_s,
                    "Wall-time cap for the sweep and the confirmation (0: none)");
  cmd->add_option("--point-timeout", f->point_timeout,
                  "Kill a point's worker after this long (default: max(120 s, 10x --time))");
  cmd->add_option(
      "--memory-cap", f->memory_cap,
      "Kill a point's worker above this resident memory: 4G, 512M (default: 90% of the memory "
      "available at start)");
  cmd->add_option("--out", f->options.out_dir,
                  "Directory for results.jsonl, references and worker logs "
                  "(default: torchperf-runs/MODEL-TIME)");
  cmd->add_option(
      "--resume", f->resume,
      "Continue the experiment journaled in DIR: finished points are kept, the rest run");
  cmd->add_option("--cluster", f->cluster,
                  "Measure the points on a Ray cluster's nodes, one point per node at a time: ray "
                  "(the cluster at $RAY_ADDRESS), ray://HOST:PORT or ray:HOST:PORT "
                  "(docs/cluster.md)");
  cmd->add_flag("--json", f->json, "Print the result as JSON");
  cmd->add_flag("--quiet", f->quiet, "No progress bar");
  cmd->add_flag("--progress-lines", f->progress_lines,
                "Progress as one JSON line per update on stderr, for tools (the Python API)");
  cmd->add_option("--worker-exe", f->worker_exe)->group("");  // tests: a fault-injecting worker
  for (const auto& knob : inference_knobs())
    cmd->add_option_function<std::string>(
        knob_flag(knob), [f, name = knob.name](const std::string& v) { f->knob_values[name] = v; },
        "Values to sweep, comma-separated: " + knob.description + " [" + knob_values_help(knob) +
            "]");
  return [cmd, f]() -> int {
    if (!cmd->parsed()) return -1;
    return run(*f);
  };
}

}  // namespace torchperf::cli

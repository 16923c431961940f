#include <unistd.h>

#include <filesystem>

#include <algorithm>
#include <csignal>
#include <iostream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <memory>

#include "budget_option.h"
#include "commands.h"
#include "exit_codes.h"
#include "knob_flags.h"
#include "progress_bar.h"
#include "stop_signals.h"
#include "report_files.h"
#include "torchperf/config/knob.h"
#include "torchperf/error.h"
#include "torchperf/process/scratch_dir.h"
#include "torchperf/sweep/tune_options.h"
#include "torchperf/train/chrome_trace.h"
#include "torchperf/train/train_report.h"
#include "torchperf/train/training_session.h"
#include "torchperf/train/training_side.h"

namespace torchperf::cli {
namespace {

struct TrainFlags {
  TrainingSpec spec;
  std::string data;  // "": default_training_data(model)
  std::string from_python;  // MODULE:CALLABLE: an nn.Module trained in Python
  std::string config;
  // knob name -> value from its own flag
  std::shared_ptr<std::map<std::string, std::string>> knob_values =
      std::make_shared<std::map<std::string, std::string>>();
  std::size_t steps = 20;
  std::size_t warmup = 3;
  bool ladder = false;
  bool allow_semantic = false;
  std::size_t max_rungs = 10;
  std::string budget;
  std::size_t rounds = 4;
  std::size_t max_rounds = 12;
  std::size_t block_steps = 3;
  std::string trace;
  std::string trace_schedule = "1,1,3";
  std::string html;
  bool json = false;
  bool quiet = false;
  std::string memory_cap;
};

TraceSchedule parse_schedule(const std::string& text) {
  TraceSchedule s;
  unsigned long w = 0, u = 0, a = 0;
  char c1 = 0, c2 = 0;
  std::istringstream in(text);
  if (!(in >> w >> c1 >> u >> c2 >> a) || c1 != ',' || c2 != ',' || a == 0 || !in.eof())
    throw UsageError("--trace-schedule '" + text +
                     "': expected WAIT,WARMUP,ACTIVE step counts, e.g. 1,1,3 (ACTIVE >= 1)");
  s.wait = w;
  s.warmup = u;
  s.active = a;
  return s;
}

// Every flag read and checked, by name, before any work starts.
void check_flags(TrainFlags& f) {
  if (!f.from_python.empty()) {
    if (!f.spec.model.empty())
      throw UsageError("train: expected a model or --from-python MODULE:CALLABLE, not both");
    if (f.from_python.find(':') == std::string::npos)
      throw UsageError("--from-python '" + f.from_python + "': expected MODULE:CALLABLE");
    f.spec.model = "python:" + f.from_python;
  }
  if (f.spec.model.empty())
    throw UsageError(
        "train: expected a model (a TorchScript file or builtin:NAME) or --from-python MODULE:CALLABLE");
  if (f.steps < 1) throw UsageError("--steps: expected at least 1");
  if (f.ladder && f.rounds < kMinRatioRounds)
    throw UsageError("--rounds: expected at least " + std::to_string(kMinRatioRounds) +
                     " (a confidence interval needs them)");
  if (f.data.empty()) f.data = default_training_data(f.spec.model);
  f.spec.data.source = f.data;
  f.spec.data.seed = f.spec.seed;
  DataSpec::parse(f.data);
  if (!f.memory_cap.empty()) f.spec.memory_cap_bytes = parse_size(f.memory_cap, "--memory-cap");
  const RankSpec& ranks = f.spec.ranks;
  if (ranks.node_rank > 0 && f.ladder)
    throw UsageError("--ladder: the driving node (--node-rank 0) climbs; node " +
                     std::to_string(ranks.node_rank) + " only runs its ranks (drop --ladder)");
  if (ranks.nnodes > 1 && f.ladder)
    throw UsageError("--ladder runs on one node (each rung's ranks start anew, which the other "
                     "nodes would have to follow); with --nnodes, train one configuration");
  if (ranks.distributed() && !f.trace.empty())
    throw UsageError("--trace: the trace is of a TorchScript step in this process; DDP's ranks "
                     "step in Python (`torchperf trace` reads PyTorch's own profiler traces)");
}

// The report's header: what trains on what, and the notes the context has before a step.
TrainReport report_header(const TrainFlags& f, const TrainingContext& context,
                          const TrainingPlan& given) {
  TrainReport report;
  report.model = f.spec.model;
  report.data = context.data->describe();
  report.device = context.device;
  report.loss = context.loss;
  report.optimizer = f.spec.optimizer == "adam" ? "Adam" : "SGD (momentum 0.9)";
  if (!context.ranks_plan.empty()) report.notes.push_back(context.ranks_plan);
  if (!context.ranks_warning.empty()) {
    report.notes.push_back("warning: " + context.ranks_warning);
    if (!f.quiet) std::cerr << "train: warning: " << context.ranks_warning << "\n";
  }
  if (f.spec.memory_cap_bytes > 0 && !given.in_python())
    report.notes.push_back("--memory-cap: a TorchScript step runs in this process, where the cap "
                           "is the capacity advice reads, not a limit; the Python step "
                           "(step=eager) is held to it");
  return report;
}

// A change of process state (threads), and a step in Python, run in workers of their own.
WorkerRun train_workers(const TrainFlags& f) {
  WorkerRun workers;
  workers.executable = std::filesystem::read_symlink("/proc/self/exe").string();
  workers.log_dir = scratch_path("train-workers");
  std::filesystem::create_directories(workers.log_dir);
  // A node that follows answers when the driver's run ends, however long that takes.
  workers.limits.time_limit_s = f.spec.ranks.node_rank > 0 ? 7 * 86400 : 600;
  workers.limits.memory_cap_bytes = f.spec.memory_cap_bytes;
  workers.tick = [](double) { return !StopSignals::requested(); };
  return workers;
}

// The ladder from the loop as given; the TorchScript session of its top rung, for a trace.
std::unique_ptr<TrainingSession> climb_ladder(const TrainFlags& f, TrainingContext& context,
                                              const Configuration& config, WorkerRun& workers,
                                              ProgressBar& bar, TrainReport& report) {
  const StopSignals stop_signals;
  LadderOptions o;
  o.allow_semantic_changes = f.allow_semantic;
  o.max_rungs = f.max_rungs;
  o.breakdown_steps = f.steps;
  o.warmup_steps = f.warmup;
  o.compare.rounds = f.rounds;
  o.compare.max_rounds = std::max(f.rounds, f.max_rounds);
  o.compare.steps = f.block_steps;
  o.budget_s = budget_seconds(f.budget);
  o.workers = workers;
  LadderEvents events;
  events.stop_requested = [] { return StopSignals::requested(); };
  events.status = [&](const std::string& what) { bar.update(what, 0.5, 0); };
  events.attempt = [&](const Attempt& a) {
    if (f.quiet) return;
    bar.finish();
    if (!a.failure.empty()) {
      std::cerr << "  tried " << a.change << ": failed (" << a.failure << ")\n";
      return;
    }
    std::cerr << "  tried " << a.change << ": " << fmt::format("{:.3f}x", a.speedup.ratio)
              << (a.kept ? " (kept)" : " (not kept)") << "\n";
  };
  report.ladder = climb(context, config, o, events);
  std::filesystem::remove_all(workers.log_dir);  // kept on failure: the error names the log
  bar.finish();
  report.configuration = report.ladder->rungs.back().configuration.to_string();
  if (!f.trace.empty() && !report.ladder->rungs.back().in_python)
    return std::make_unique<TrainingSession>(context, report.ladder->rungs.back().configuration);
  return nullptr;
}

// The step in a Python worker: its warm-up (and compile), then the measured steps. False on a
// node that follows the driving node's launcher (it has nothing to report; said here).
bool train_in_python(const TrainFlags& f, TrainingContext& context, const Configuration& config,
                     const TrainingPlan& given, WorkerRun& workers, ProgressBar& bar,
                     TrainReport& report) {
  if (!f.trace.empty())
    throw UsageError("--trace: the trace is of a TorchScript step; with step=" + given.step +
                     " use `torchperf trace` on PyTorch's own");
  const StopSignals stop_signals;
  bar.update("warming up (and compiling) in Python", 0.2, 0);
  HeadToHeadOptions unused;
  RemoteTrainingSide side(context, config, unused, f.warmup, workers, "train");
  if (side.facts().followed) {
    bar.finish();
    std::filesystem::remove_all(workers.log_dir);
    const RankSpec& ranks = f.spec.ranks;
    if (!f.quiet)
      std::cerr << fmt::format("train: node {} of {}: its {} rank(s) trained with the driving "
                               "node's, and ended; the report is node 0's\n",
                               ranks.node_rank, ranks.nnodes, ranks.nproc);
    if (f.json)
      std::cout << nlohmann::json{{"schema", "torchperf.train/1"},
                                  {"node_rank", ranks.node_rank},
                                  {"followed", true}}
                       .dump(2)
                << "\n";
    return false;
  }
  report.configuration = config.to_string();
  for (const auto& n : resolve_training(config, context.traits).notes) report.notes.push_back(n);
  if (side.compile_s() >= 0)
    report.notes.push_back(fmt::format("torch.compile took {:.1f} s (the first step; not in the "
                                       "step times)",
                                       side.compile_s()));
  bar.update("training steps", 0.6, 0);
  report.breakdown = side.breakdown(f.steps);
  side.finish();
  bar.finish();
  report.advice = advise(report.breakdown, context.advice_context(given));
  std::filesystem::remove_all(workers.log_dir);
  return true;
}

// The trace, the HTML page and the report, as the flags ask.
void write_outputs(const TrainFlags& f, const TraceSchedule& schedule, const TrainReport& report,
                   TrainingSession* last) {
  if (!f.trace.empty() && !last) {
    // The ladder's top rung runs in Python: the trace is of a TorchScript step.
    std::cerr << "train: no trace written: the top rung runs in Python ("
              << report.configuration << "); `torchperf trace` reads PyTorch's own\n";
  } else if (!f.trace.empty()) {
    const TraceSummary t = write_trace(*last, schedule, f.trace);
    if (!f.quiet)
      std::cerr << fmt::format(
          "train: trace of {} steps ({} phase, {} operator events) written to {}\n", t.steps,
          t.phase_events, t.operator_events, f.trace);
  }
  if (!f.html.empty()) {
    write_text_file(f.html, render_train_html(report));
    if (!f.quiet) std::cerr << "train: HTML report written to " << f.html << "\n";
  }
  if (f.json)
    std::cout << to_json(report).dump(2) << "\n";
  else
    std::cout << format_train_report(report);
}

int run(TrainFlags& f) {
  check_flags(f);
  Configuration config = Configuration::parse(f.config);
  for (const auto& [knob, value] : *f.knob_values) config.set(knob, value);
  const TraceSchedule schedule = parse_schedule(f.trace_schedule);
  budget_seconds(f.budget);  // read again by the ladder: checked here, before any work
  TrainingContext context = TrainingContext::open(f.spec);
  // The loop as given sets the batch the rate belongs to (--lr-scaling linear scales from it).
  const TrainingPlan given = plan_of(context, config);
  context.spec.reference_batch = given.batch;
  TrainReport report = report_header(f, context, given);
  ProgressBar bar(!f.quiet && isatty(STDERR_FILENO));
  std::unique_ptr<TrainingSession> last;
  WorkerRun workers = train_workers(f);
  if (f.ladder) {
    last = climb_ladder(f, context, config, workers, bar, report);
  } else if (given.in_python()) {
    if (!train_in_python(f, context, config, given, workers, bar, report)) return kSuccess;
  } else {
    last = std::make_unique<TrainingSession>(context, config);
    report.configuration = last->configuration().to_string();
    for (const auto& n : last->configuration().notes) report.notes.push_back(n);
    const double total = static_cast<double>(f.warmup + f.steps);
    report.breakdown = last->run(f.warmup, f.steps, [&](std::size_t done) {
      bar.update("training steps", done / total, 0);
    });
    bar.finish();
    report.advice = advise(report.breakdown, context.advice_context(last->plan()));
  }
  write_outputs(f, schedule, report, last.get());
  return kSuccess;
}

}  // namespace

Runner add_train_command(CLI::App& app) {
  auto f = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Profile a training step: where the time goes, advice, and (--ladder) the climb");
  cmd->add_option("model", f->spec.model, "TorchScript file, or builtin:NAME");
  cmd->add_option("--from-python", f->from_python,
                  "MODULE:CALLABLE returning an nn.Module (or the class): trained in a Python "
                  "worker, eagerly or under torch.compile (the step knob)");
  cmd->add_option(
         "--data", f->data,
         "synthetic-cifar (32x32 RGB bytes resized, 10 classes), synthetic-features:N (random "
         "vectors of N, 10 classes), images:DIR (one sub-folder of JPEG/PNG per class) or "
         "tensors:FILE (torch.save((inputs, targets))). Default: synthetic-features:784 for "
         "builtin:mlp, else synthetic-cifar");
  cmd->add_option("--image-size", f->spec.data.image_size, "Images are resized to this square size")
      ->default_val(224);
  cmd->add_flag("--strict", f->spec.data.strict,
                "A corrupt image is an error (default: skipped and counted)");
  cmd->add_option("--loss", f->spec.loss,
                  "auto (cross-entropy for class targets, else mse), cross-entropy, mse")
      ->default_val("auto");
  cmd->add_option("--optimizer", f->spec.optimizer, "sgd (momentum 0.9) or adam")
      ->default_val("sgd");
  cmd->add_option("--lr", f->spec.learning_rate, "Learning rate")->default_val(0.01);
  cmd->add_option("--grad-scaler", f->spec.grad_scaler,
                  "auto (with --amp fp16), on, off: skip steps whose gradients are not finite")
      ->default_val("auto");
  cmd->add_option("--device", f->spec.device, "auto, cpu, cuda or cuda:N")->default_val("auto");
  cmd->add_option("--seed", f->spec.seed, "Seed for synthetic data")->default_val(0);
  cmd->add_option("--config", f->config, "Training configuration string, e.g. workers=2,amp=bf16");
  cmd->add_option("--steps", f->steps, "Measured steps (per ladder rung, for its breakdown)")
      ->default_val(20);
  cmd->add_option("--warmup", f->warmup, "Steps run before measuring (per new configuration)")
      ->default_val(3);
  cmd->add_flag("--ladder", f->ladder,
                "Climb from the loop as given: try what the largest bottleneck calls for, keep it "
                "if it wins head to head, repeat");
  cmd->add_flag("--allow-semantic-changes", f->allow_semantic,
                "Let the ladder change the batch size and the precision (they change what is "
                "learned: AMP, bf16 where the device has it, else fp16 with a gradient scaler; "
                "a larger batch with --lr-scaling)");
  cmd->add_option("--max-rungs", f->max_rungs, "Ladder: at most this many kept changes")
      ->default_val(10);
  // A named object: GCC 12 at -O3 takes a value-initialised temporary's strings for uninitialised.
  const LadderOptions defaults;
  add_budget_option(cmd, f->budget, defaults.budget_s,
                    "Ladder: the time the climb may take (checked before each change; 0: no limit)");
  cmd->add_option("--lr-scaling", f->spec.lr_scaling,
                  "With a batch larger than the loop's: none (keep --lr) or linear (scale it "
                  "with the batch)")
      ->default_val("none");
  cmd->add_option("--rounds", f->rounds, "Ladder: interleaved rounds per head-to-head (>= 4)")
      ->default_val(4);
  cmd->add_option("--max-rounds", f->max_rounds,
                  "Ladder: while a head-to-head cannot tell whether the change gains 2%, two more "
                  "rounds at a time, up to this many")
      ->default_val(12);
  cmd->add_option("--block-steps", f->block_steps, "Ladder: timed steps per block of a round")
      ->default_val(3);
  cmd->add_option("--trace", f->trace,
                  "Write a Chrome trace (Perfetto) of some steps to FILE.json");
  cmd->add_option("--trace-schedule", f->trace_schedule, "WAIT,WARMUP,ACTIVE steps of the trace")
      ->default_val("1,1,3");
  cmd->add_option("--html", f->html, "Write the HTML report (stacked step-time bars) to FILE.html");
  cmd->add_flag("--json", f->json, "Print the result as JSON");
  cmd->add_flag("--quiet", f->quiet, "No progress output");
  cmd->add_option("--nproc", f->spec.ranks.nproc,
                  "DDP ranks on this node, started by torch's launcher (torch.distributed.run); "
                  "the step runs in Python, wrapped in DistributedDataParallel")
      ->default_val(1);
  cmd->add_option("--nnodes", f->spec.ranks.nnodes,
                  "Nodes (launcher invocations) meeting at one c10d rendezvous")
      ->default_val(1);
  cmd->add_option("--node-rank", f->spec.ranks.node_rank,
                  "This node: 0 drives and reports (it hosts the rendezvous); others only run "
                  "their ranks")
      ->default_val(0);
  cmd->add_option("--rdzv-endpoint", f->spec.ranks.rdzv_endpoint,
                  "HOST:PORT of the rendezvous, the same on every node (--nnodes > 1)");
  cmd->add_option("--collective-timeout", f->spec.ranks.collective_timeout_s,
                  "Seconds a rank waits in an all-reduce for the others before the run fails")
      ->default_val(120);
  cmd->add_option("--join-timeout", f->spec.ranks.join_timeout_s,
                  "Seconds every node has to join the rendezvous")
      ->default_val(120);
  cmd->add_option("--memory-cap", f->memory_cap,
                  "Memory each training process may use (e.g. 2G, 512M): a step over it is out of "
                  "memory, and the ladder does not try a batch it estimates would not fit");
  add_knob_flags(*cmd, training_knobs(), f->knob_values);
  return [cmd, f]() -> int {
    if (!cmd->parsed()) return -1;
    return run(*f);
  };
}

}  // namespace torchperf::cli

// `serve-tune`: the serving settings with the highest request rate within a latency objective.
// The offline batch-latency curve comes from bench in worker processes (one per thread count, as
// process state requires), and each candidate from a fresh `torchperf serve` process, loaded over
// loopback by this one.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>


#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "budget_option.h"
#include "commands.h"
#include "config_argument.h"
#include "exit_codes.h"
#include "progress_bar.h"
#include "stop_signals.h"
#include "torchperf/error.h"
#include "torchperf/feed/length_distribution.h"
#include "torchperf/serve/batching_policy.h"
#include "torchperf/serve/bucket_plan.h"
#include "torchperf/serve/load_generator.h"
#include "torchperf/serve/serve_tune.h"
#include "torchperf/serve/serve_tune_report.h"
#include "torchperf/serve/server_metrics.h"
#include "torchperf/process/child_process.h"
#include "torchperf/worker/paired_workers.h"
#include "torchperf/sweep/tune_options.h"
#include "torchperf/text.h"

namespace torchperf::cli {
namespace {

namespace fs = std::filesystem;

std::string self() { return fs::read_symlink("/proc/self/exe").string(); }

// `torchperf serve … --port 0` as a child; its first line names the port. Stopped with SIGTERM
// (then SIGKILL after 30 s) when destroyed.
class ServerProcess final : public ServedCandidate {
 public:
  ServerProcess(std::vector<std::string> args, std::string model_name, LatencyObjective objective,
                std::string log, std::optional<LengthDistribution> lengths)
      : args_(std::move(args)),
        log_(std::move(log)),
        model_(std::move(model_name)),
        objective_(std::move(objective)),
        lengths_(std::move(lengths)) {
    start();
  }
  ~ServerProcess() override { stop(); }

  LoadSummary load(double rate, double duration) override {
    // Requests an overloaded run gave up on are still queued in the server (and in its HTTP
    // threads): a fresh server, so that the next run does not start behind them.
    if (overloaded_) {
      stop();
      start();
      overloaded_ = false;
    }
    LoadOptions o;
    o.url = url_;
    o.model = model_;
    o.arrivals.rate_per_s = rate;
    o.arrivals.duration_s = duration;
    o.arrivals.seed = seed_++;
    o.connections = 64;
    o.lengths = lengths_;
    o.timeout_s = std::max(2.0, 20 * objective_.limit_s);
    const LoadRun run = run_load(o);
    if (!run.stopped.empty() && run.unsent > 0 && run.records.empty())
      throw RuntimeFailure("serve-tune: " + run.stopped);
    std::vector<RequestRecord> records = run.records;
    // Requests never sent count against the objective: they were not answered in time.
    for (std::size_t i = 0; i < run.unsent; ++i)
      records.push_back({duration, duration, duration, RequestOutcome::kTimeout});
    LoadSummary summary = summarize_load(records, run.duration_s, objective_);
    overloaded_ = summary.ok < summary.requests;
    return summary;
  }

  std::map<std::size_t, std::size_t> batch_sizes() override {
    return parse_batch_size_histogram(fetch_metrics(url_));
  }

 private:
  // Spawns the server and reads its first line for the port.
  void start() {
    ChildSpec spec;
    spec.executable = args_.front();
    spec.args.assign(args_.begin() + 1, args_.end());
    spec.log_path = log_;
    spec.truncate_log = false;
    spec.pipe_stdout = true;
    const Child child = launch_child(spec);
    pid_ = child.pid;
    FILE* f = fdopen(child.out_fd, "r");
    char line[4096] = {0};
    const bool got = fgets(line, sizeof line, f) != nullptr;
    fclose(f);
    // A stop signal interrupts the wait for the port (EINTR): stopped, not a server that failed.
    if (StopSignals::requested()) {
      stop();
      throw Interrupted("interrupted");
    }
    std::smatch m;
    const std::string first = got ? line : "";
    if (!std::regex_search(first, m, std::regex(R"(http://127\.0\.0\.1:(\d+))"))) {
      stop();
      std::ifstream in(log_);
      std::string last, l;
      while (std::getline(in, l))
        if (!l.empty()) last = l;
      throw RuntimeFailure("serve-tune: the server did not start: " +
                           (last.empty() ? "see " + log_ : last));
    }
    url_ = "http://127.0.0.1:" + m[1].str();
  }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 3000; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  pid_t pid_ = -1;
  std::vector<std::string> args_;
  std::string log_;
  std::string url_, model_;
  bool overloaded_ = false;
  LatencyObjective objective_;
  std::optional<LengthDistribution> lengths_;
  std::uint64_t seed_ = 1;
};

struct Flags {
  BenchOptions model;
  std::vector<std::string> inputs;
  std::string config;
  std::string slo = "p99=50ms";
  std::string budget;
  std::vector<std::size_t> max_batches = {1, 2, 4, 8, 16, 32};
  std::string delays = "1ms,5ms";
  std::vector<std::string> buckets;
  std::vector<std::int64_t> token_budgets;
  std::size_t cores = 0;
  std::vector<std::size_t> instances, threads;
  std::string out;
  double curve_time_s = 1.5;
  double min_run_s = 5;
  std::string max_start;
  double requests = 0;
  bool json = false;
  bool quiet = false;
};

// A --dim's curve is measured at its median length (and one more): a bucketed queue's call holds
// requests of about one length, and most are near the median. Over the whole stream, a batch of
// B would be padded to the longest of B random lengths, and batching would look many times
// dearer than it is served.
std::vector<std::string> median_dims(const std::vector<std::string>& dims) {
  std::vector<std::string> out;
  for (const auto& d : dims) {
    const NamedDim dim = parse_dim_option(d);
    std::vector<std::int64_t> drawn = dim.distribution.draw(4096, 0);
    std::nth_element(drawn.begin(), drawn.begin() + drawn.size() / 2, drawn.end());
    const std::int64_t median = drawn[drawn.size() / 2];
    // A range of two: an export cannot make a dimension of one size dynamic.
    out.push_back(fmt::format("{}={}..{}", dim.name, median, median + 1));
  }
  return out;
}

class ProcessBackend final : public ServingBackend {
 public:
  ProcessBackend(const Flags& f, BenchOptions options, std::string log_dir, LatencyObjective slo)
      : f_(f), options_(std::move(options)), log_dir_(std::move(log_dir)), slo_(std::move(slo)) {}

  ServiceCurve measure_curve(std::size_t threads,
                             const std::vector<std::size_t>& batches) override {
    std::map<std::size_t, double> seconds;
    for (const auto b : batches) {
      BenchOptions o = options_;
      o.dims = median_dims(options_.dims);
      o.config.set("threads", std::to_string(threads));
      o.config.set("batch", std::to_string(b));
      o.time_s = f_.curve_time_s;
      WorkerRun run;
      run.executable = self();
      run.log_dir = log_dir_;
      run.log_prefix = fmt::format("curve-t{}-b{}", threads, b);
      run.limits.time_limit_s = 120 + 20 * o.time_s;
      run.tick = [](double) { return !StopSignals::requested(); };
      const BenchResult r = measure_in_worker(o, run);
      if (!r.measurement || !(r.measurement->throughput_samples_per_s > 0))
        throw RuntimeFailure(
            fmt::format("serve-tune: batch {} at {} threads gave no measurement", b, threads));
      seconds[b] = static_cast<double>(b) / r.measurement->throughput_samples_per_s;
    }
    return ServiceCurve(seconds);
  }

  std::unique_ptr<ServedCandidate> serve(const ServingCandidate& c) override {
    std::vector<std::string> args = {self(), "serve"};
    if (!options_.model.empty()) args.push_back(options_.model);
    if (!options_.input_spec.empty()) args.insert(args.end(), {"--input", options_.input_spec});
    for (const auto& d : options_.dims) args.insert(args.end(), {"--dim", d});
    if (!options_.python_module.empty())
      args.insert(args.end(), {"--python-module", options_.python_module});
    if (!options_.calibration_file.empty())
      args.insert(args.end(), {"--calibration", options_.calibration_file});
    if (!c.edges.empty()) args.insert(args.end(), {"--buckets", buckets_option(c.edges)});
    if (c.max_tokens > 0) args.insert(args.end(), {"--max-tokens", std::to_string(c.max_tokens)});
    Configuration config = options_.config;
    config.set("threads", std::to_string(c.threads));
    args.insert(
        args.end(),
        {"--config", config.to_string(), "--name", "candidate", "--port", "0", "--instances",
         std::to_string(c.instances), "--max-batch", std::to_string(c.max_batch),
         "--max-queue-delay", fmt::format("{:g}us", c.max_queue_delay_s * 1e6), "--max-queue",
         std::to_string(std::max<std::size_t>(256, 4 * c.max_batch)), "--device", options_.device});
    const std::string log =
        (fs::path(log_dir_) / fmt::format("server-{}.log", ++servers_)).string();
    std::optional<LengthDistribution> lengths;
    if (!options_.dims.empty()) lengths = parse_dim_option(options_.dims.front()).distribution;
    return std::make_unique<ServerProcess>(args, "candidate", slo_, log, lengths);
  }

 private:
  const Flags& f_;
  BenchOptions options_;
  std::string log_dir_;
  LatencyObjective slo_;
  int servers_ = 0;
};

// A --dim: the bucket edges and token budgets to try (given, or from its distribution), and an
// objective that holds for the longest quarter of requests too.
void plan_lengths(const Flags& f, const BenchOptions& options, ServeTuneOptions& o) {
  if (options.dims.empty()) {
    if (!f.buckets.empty() || !f.token_budgets.empty())
      throw UsageError("--buckets and --token-budgets: need a --dim, the length that varies");
    return;
  }
  const LengthDistribution lengths = parse_dim_options(options.dims).front().distribution;
  o.by_length = true;
  o.bucket_sets = bucket_sets_for(lengths);
  if (!f.buckets.empty()) {
    o.bucket_sets.clear();
    for (const auto& b : f.buckets) o.bucket_sets.push_back(bucket_edges_option(b, &lengths));
  }
  o.token_budgets = f.token_budgets.empty() ? std::vector<std::int64_t>{0, 4 * lengths.max}
                                            : f.token_budgets;
}

// The `torchperf serve` command that serves the winner as it was measured.
std::string serve_command_of(const BenchOptions& options, const ServingCandidate& w) {
  std::string out = "serve it: torchperf serve " + options.model;
  if (!options.input_spec.empty()) out += " --input '" + options.input_spec + "'";
  for (const auto& d : options.dims) out += " --dim '" + d + "'";
  Configuration config = options.config;
  config.set("threads", std::to_string(w.threads));
  out += fmt::format(" --config '{}' --instances {} --max-batch {} --max-queue-delay {:g}us",
                     config.to_string(), w.instances, w.max_batch, w.max_queue_delay_s * 1e6);
  if (!w.edges.empty()) out += " --buckets " + buckets_option(w.edges);
  if (w.max_tokens > 0) out += fmt::format(" --max-tokens {}", w.max_tokens);
  return out;
}

int run(Flags& f) {
  BenchOptions options = f.model;
  for (const auto& i : f.inputs) options.input_spec += (options.input_spec.empty() ? "" : ";") + i;
  options.model = config_argument_of(options.model, f.config);
  apply_config_argument(f.config, options);
  if (options.model.empty())
    throw UsageError("serve-tune: expected a model (a TorchScript file or builtin:NAME)");
  default_to_serving(options.config, options.model);
  ServeTuneOptions o;
  o.objective = parse_latency_objective(f.slo);
  o.budget_s = budget_seconds(f.budget);
  o.cores = f.cores > 0 ? f.cores : std::max(1u, std::thread::hardware_concurrency());
  o.max_batches = f.max_batches;
  o.delays_s.clear();
  for (const auto& d : split(f.delays, ',')) o.delays_s.push_back(parse_latency(d, "--delays"));
  o.min_run_s = f.min_run_s;
  if (!f.max_start.empty()) o.max_start_s = parse_latency(f.max_start, "--max-start");
  o.expected_requests = f.requests;
  o.instances = f.instances;
  o.threads = f.threads;
  plan_lengths(f, options, o);
  validate(o);
  validate(options);
  if (f.out.empty()) f.out = "serve-tune-" + fs::path(options.model).stem().string();
  fs::create_directories(fs::path(f.out) / "logs");

  const StopSignals stop_signals;  // declared before the backend: its servers stop first
  ProcessBackend backend(f, options, (fs::path(f.out) / "logs").string(), o.objective);
  ProgressBar bar(!f.quiet && isatty(STDERR_FILENO));
  SteadyTimeSource clock;
  const auto started = std::chrono::steady_clock::now();
  if (!f.quiet)
    std::cerr << fmt::format(
        "serve-tune: {} candidates on {} cores, objective {}, budget {:.0f} s\n",
        serving_candidates(o).size(), o.cores, o.objective.text, o.budget_s);
  std::string phase_now = "measuring the offline curve";
  const auto stopped = [&] {
    return Interrupted(fmt::format(
        "serve-tune stopped by {} while {}; its servers and workers are stopped, and nothing is "
        "kept (serve-tune has no journal): run it again to start over",
        stop_signal_name(), phase_now));
  };
  ServeTuneResult r;
  try {
    r = run_serve_tune(o, backend, clock, [&](const std::string& phase, double x) {
        phase_now = phase;
        if (StopSignals::requested()) throw stopped();
        const double spent =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        bar.show(x, phase, std::max(0.0, o.budget_s - spent));
      });
  } catch (const Interrupted&) {
    bar.finish();
    throw stopped();  // a worker stopped mid-curve says only "interrupted"
  }
  bar.finish();
  const nlohmann::json j = to_json(r, o);
  std::ofstream(fs::path(f.out) / "serve-tune.json") << j.dump(2) << "\n";
  std::ofstream(fs::path(f.out) / "serve-tune.html") << serve_tune_html(r, o, options.model);
  std::ofstream(fs::path(f.out) / "serve-tune.csv") << serve_tune_csv(r, o);
  if (f.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "serve-tune of " << options.model << " (" << options.config.to_string()
              << "), objective " << o.objective.text << "\n"
              << serve_tune_table(r, o).render(TextFormat::kTerminal);
    std::cout << fmt::format("time: {:.0f} s of {:.0f} s{}\n", r.elapsed_s, o.budget_s,
                             r.stopped.empty() ? "" : " (" + r.stopped + ")");
    if (r.winner) {
      const auto& w = r.candidates[*r.winner].candidate;
      std::cout << serve_tune_verdict(r, o) << "\n";
      if (const std::string b = serve_tune_break_even(r); !b.empty()) std::cout << b << "\n";
      std::cout
                << fmt::format("its server was ready {:.1f} s after launch (model, start-up check, "
                               "port)\n",
                               r.candidates[*r.winner].start_s)
                << serve_command_of(options, w) << "\n";
    }
    std::cout << "wrote " << (fs::path(f.out) / "serve-tune.{json,csv,html}").string() << "\n";
  }
  if (!r.winner) {
    // Only a cap that stopped every server started: a budget spent before the first load run
    // leaves servers unmeasured too, and the cap is not why.
    const auto past_cap = [&](const CandidateResult& c) { return c.start_s > o.max_start_s; };
    const bool all_slow =
        o.max_start_s > 0 && std::any_of(r.candidates.begin(), r.candidates.end(), past_cap) &&
        std::none_of(r.candidates.begin(), r.candidates.end(),
                     [](const CandidateResult& c) { return c.measured; });
    std::cerr << "torchperf: no candidate met " << o.objective.text << " at any rate tried"
              << (all_slow ? fmt::format(" (no server was ready within --max-start {:g} s)",
                                         o.max_start_s)
                           : "")
              << "\n";
    return kInvalidResult;
  }
  return kSuccess;
}

}  // namespace

Runner add_serve_tune_command(CLI::App& app) {
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "serve-tune",
      "Find the serving settings (instances, threads, max batch, queue delay) with "
      "the highest request rate whose latency meets an objective, by measurement");
  cmd->add_option("model", f->model.model,
                  "A torch.export program (.pt2), a TorchScript file, builtin:NAME, or a tune's "
                  "folder (its winner is the configuration tuned for serving)");
  cmd->add_option("--input", f->inputs, "Input spec per forward argument (as for bench)");
  cmd->add_option("--config", f->config,
                  "The model's configuration (string, or tune's winner FILE.json); threads is "
                  "searched");
  cmd->add_option("--slo", f->slo, "Latency objective, e.g. p99=50ms")->default_val("p99=50ms");
  // A named object: GCC 12 at -O3 takes a value-initialised temporary's strings for uninitialised.
  const ServeTuneOptions defaults;
  add_budget_option(cmd, f->budget, defaults.budget_s, "Time for the whole search");
  cmd->add_option("--max-batches", f->max_batches, "max_batch values to try")
      ->delimiter(',')
      ->default_str("1,2,4,8,16,32");
  cmd->add_option("--delays", f->delays, "max_queue_delay values to try")->default_val("1ms,5ms");
  cmd->add_option("--dim", f->model.dims,
                  "A named input dimension's distribution (as for bench: "
                  "S=lognormal:40:0.9:4..512): requests are drawn from it, bucket edges and token "
                  "budgets are searched, and the objective must hold for the longest quarter too");
  cmd->add_option("--buckets", f->buckets,
                  "With a --dim, the bucket edges to try, each as serve takes them (one, "
                  "per-length, plan:K, or E1/E2/...); default: one, plan:2, plan:4, per-length");
  cmd->add_option("--token-budgets", f->token_budgets,
                  "With a --dim, the --max-tokens values to try (0: no budget); default: 0 and 4 "
                  "x the longest length")
      ->delimiter(',');
  cmd->add_option("--cores", f->cores, "Cores to share among instances (default: all)");
  cmd->add_option("--instances", f->instances, "Instance counts to try (default: all that fit)")
      ->delimiter(',');
  cmd->add_option("--threads", f->threads,
                  "Threads per instance to try (default: all that fit the cores)")
      ->delimiter(',');
  cmd->add_option("--curve-time", f->curve_time_s, "Seconds of bench per batch size of the curve")
      ->default_val(1.5);
  cmd->add_option("--min-run", f->min_run_s, "A load run's least length in seconds")
      ->default_val(5);
  cmd->add_option("--max-start", f->max_start,
                  "A cap on time to ready (e.g. 30s): a server not ready within it after launch "
                  "is not measured nor crowned (start-up is paid at every deploy)");
  cmd->add_option("--requests", f->requests,
                  "The requests a server answers over its life (e.g. 100000): the winner is then "
                  "the one that answers them soonest, its time to ready included (requests / "
                  "(start + requests / rate)), not the highest rate. 0: start-up not weighed")
      ->default_val(0);
  cmd->add_option("--out", f->out, "Folder for serve-tune.json/.csv/.html and the servers' logs");
  cmd->add_option("--device", f->model.device, "auto, cpu, cuda or cuda:N")->default_val("auto");
  cmd->add_flag("--json", f->json, "Print the result as JSON");
  cmd->add_flag("--quiet", f->quiet, "No progress");
  return [cmd, f]() -> int {
    if (!cmd->parsed()) return -1;
    return run(*f);
  };
}

}  // namespace torchperf::cli

// `serve`: the model (as tune configured it) behind the inference protocol, until SIGTERM or
// Ctrl-C; `load`: requests at scheduled times (or from N clients) and what they measured.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "config_argument.h"
#include "exit_codes.h"
#include "knob_flags.h"
#include "progress_bar.h"
#include "python_source.h"
#include "torchperf/config/apply.h"
#include "torchperf/config/configuration_file.h"
#include "torchperf/error.h"
#include "torchperf/feed/input_spec.h"
#include "torchperf/feed/length_distribution.h"
#include "torchperf/serve/inference_server.h"
#include "torchperf/serve/serving_plan.h"
#include "torchperf/serve/load_generator.h"
#include "torchperf/serve/load_summary.h"
#include "torchperf/measure/quantile_bounds.h"
#include "torchperf/process/child_process.h"
#include "torchperf/process/process_age.h"
#include "torchperf/runtime/runtime.h"
#include "torchperf/sweep/tune_options.h"

namespace torchperf::cli {
namespace {

// SIGTERM and Ctrl-C write their number to a pipe that a watcher thread reads: a handler (not a
// blocked mask and sigwait) because libraries start threads before main (OpenBLAS's pool), and
// a signal may land on any of them.
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int sig) {
  const unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] const auto n = ::write(g_signal_pipe[1], &byte, 1);
}

void install_stop_handlers() {
  if (::pipe(g_signal_pipe) != 0)
    throw RuntimeFailure(std::string("cannot create a pipe for signals: ") + std::strerror(errno));
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
}

// Serves until SIGTERM or Ctrl-C, then drains. A model call cannot be interrupted from outside
// (one request of [100000, 64] tokens ran for minutes, issue 63): past the drain time the process
// exits at once, saying so, with 143 (130 for Ctrl-C). Returns the signal that stopped it.
int serve_until_signal(InferenceServer& server, double drain_s) {
  std::mutex mutex;
  std::condition_variable drained;
  bool served = false;
  int received = 0;
  std::thread watcher([&] {
    unsigned char byte = 0;
    while (::read(g_signal_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    std::unique_lock<std::mutex> lock(mutex);
    received = byte;
    if (received == 0) return;
    lock.unlock();
    server.stop();
    lock.lock();
    if (drained.wait_for(lock, std::chrono::duration<double>(drain_s), [&] { return served; }))
      return;
    std::cout << fmt::format("stopped ({}): the drain time of {:g} s ran out with a model call "
                             "still running; exiting without its answers",
                             received == SIGINT ? "SIGINT" : "SIGTERM", drain_s)
              << std::endl;
    std::_Exit(received == SIGINT ? kInterrupted : kTerminated);
  });
  server.serve();
  bool by_signal = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    served = true;
    by_signal = received != 0;
  }
  drained.notify_all();
  if (!by_signal) {  // serve() ended by itself: release the watcher
    const unsigned char none = 0;
    [[maybe_unused]] const auto n = ::write(g_signal_pipe[1], &none, 1);
  }
  watcher.join();
  return received;
}

struct ServeFlags {
  BenchOptions model;
  std::vector<std::string> inputs;
  std::string config;
  std::shared_ptr<std::map<std::string, std::string>> knob_values =
      std::make_shared<std::map<std::string, std::string>>();
  ServerOptions server;
  std::string max_queue_delay = "2ms";
  std::string drain_timeout = "10s";
  std::string buckets;
  std::string shapes = "planned";
  std::string shape_memory;
  std::string shapes_time = "30s";
  std::string max_call_memory = "auto";
  std::string max_tokens = "0", max_client_batch;
  std::size_t instances = 1;
  bool no_model = false;
};

std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(in, arg, '\0')) args.push_back(arg);
  return args;
}

// Worker knobs (allocator, BLAS, OpenMP variables) take only at process start: the command runs
// itself again with their environment, once.
constexpr const char* kRestartMarker = "TORCHPERF_SERVE_RESTARTED";

// Whether the configuration runs in a Python worker (its worker knobs are that worker's).
bool runs_in_python(const Configuration& config) {
  const auto family = config.get("runtime");
  return family && runtime_for(*family, config.get("graph").value_or(""), WorkloadTraits{})
                           .worker() == RuntimeWorker::kPython;
}

void restart_with_worker_environment(const Configuration& config) {
  if (worker_knobs_named(config).empty() || runs_in_python(config) ||
      std::getenv(kRestartMarker))
    return;
  ChildEnvironment env = worker_environment(config);
  env[kRestartMarker] = "1";
  std::vector<std::string> args = own_command_line();
  if (!args.empty()) args.erase(args.begin());
  std::cout.flush();
  replace_process("/proc/self/exe", args, env);
}

int run_serve(ServeFlags& f) {
  ServeRequest r;
  r.model = f.model;
  r.model.input_spec.clear();
  for (const auto& i : f.inputs)
    r.model.input_spec += (r.model.input_spec.empty() ? "" : ";") + i;
  r.model.model = config_argument_of(r.model.model, f.config);
  r.file = apply_config_argument(f.config, r.model);
  for (const auto& [knob, value] : *f.knob_values) r.model.config.set(knob, value);
  default_to_serving(r.model.config, r.model.model);
  r.server = f.server;
  r.server.version = TORCHPERF_VERSION;
  r.max_queue_delay = f.max_queue_delay;
  r.buckets = f.buckets;
  r.shapes = f.shapes;
  r.shape_memory = f.shape_memory;
  r.shapes_time = f.shapes_time;
  r.max_call_memory = f.max_call_memory;
  r.max_tokens = f.max_tokens;
  r.max_client_batch = f.max_client_batch;
  r.instances = f.instances;
  r.no_model = f.no_model;
  const double drain_s = parse_latency(f.drain_timeout, "--drain-timeout");
  ServingPlan plan = plan_serving(std::move(r), restart_with_worker_environment);
  for (const auto& warning : plan.warnings) std::cerr << warning << std::endl;
  const ServerOptions server = plan.server;
  SteadyTimeSource clock;
  InferenceServer s(server, std::move(plan.instances), clock);
  const int port = s.bind();
  // Before the line that says the port: a signal sent on reading it must find the handlers.
  install_stop_handlers();
  std::cout << fmt::format(
                   "serving '{}' at http://{}:{} ({}; {} instance{}, max batch {}, max queue "
                   "delay {}, queue {}){}; ready {:.2f} s after the process started{}",
                   server.model_name, server.host, port, plan.what, f.instances,
                   f.instances == 1 ? "" : "s", server.batching.max_batch, f.max_queue_delay,
                   server.batching.max_queue, plan.lengths, seconds_since_process_start(),
                   plan.start)
            << std::endl;
  for (const auto& line : plan.lines) std::cout << line << std::endl;
  const int received = serve_until_signal(s, drain_s);
  std::cout << fmt::format("stopped ({}): finished what was queued",
                           received == SIGINT ? "SIGINT" : "SIGTERM")
            << std::endl;
  return kSuccess;
}

struct LoadFlags {
  LoadOptions options;
  std::string url;
  double rate = 0;
  std::string duration = "10s";
  std::string arrivals = "poisson";
  std::string slo;
  std::string dim;
  bool json = false;
  bool quiet = false;
};

std::string ms(double s) { return fmt::format("{:.2f} ms", s * 1e3); }

// An open loop schedules its requests before it starts: one too short for the objective's claim
// (p99 needs 459 answered requests at 99% confidence; with lengths that vary, the longest quarter
// is judged too) could never be VALID and would always exit 3. Refused before anything is sent,
// with the duration that would do (issue 84's probe).
void check_slo_can_hold(const LatencyObjective& objective, const LoadOptions& o) {
  if (o.concurrency > 0) return;  // a closed loop's count is not known before it runs
  const std::size_t needed =
      samples_for_quantile_upper_bound(objective.quantile, kObjectiveConfidence);
  const bool quarters = o.lengths.has_value();
  const double wanted = static_cast<double>(needed) * (quarters ? 4 : 1);
  const double expected = o.arrivals.rate_per_s * o.arrivals.duration_s;
  if (expected >= wanted) return;
  throw UsageError(fmt::format(
      "--slo {}: a claim on it at {:g}% confidence needs at least {} answered requests{}, and "
      "--rate {:g} for --duration {:g}s sends about {:.0f}: give --duration {:.0f}s or more (or a "
      "higher --rate)",
      objective.text, 100 * kObjectiveConfidence, static_cast<std::size_t>(wanted),
      quarters ? fmt::format(" ({} in the longest quarter of lengths, which is judged too)", needed)
               : "",
      o.arrivals.rate_per_s, o.arrivals.duration_s, expected,
      std::ceil(wanted / o.arrivals.rate_per_s)));
}

void print_summary(const LoadOptions& o, const LoadRun& run, const LoadSummary& s) {
  if (o.concurrency > 0)
    std::cout << fmt::format("load: closed loop, {} clients for {:.1f} s against {} (model '{}')\n",
                             o.concurrency, run.duration_s, o.url, o.model);
  else
    std::cout << fmt::format(
        "load: open loop, {} arrivals at {:g}/s for {:g} s against {} (model '{}')\n",
        to_string(o.arrivals.process), o.arrivals.rate_per_s, o.arrivals.duration_s, o.url,
        o.model);
  std::string errors;
  for (const auto& [kind, n] : s.errors) errors += fmt::format(", {} {}", kind, n);
  std::cout << fmt::format("  requests    {} sent, {} ok{}{}\n", s.requests, s.ok, errors,
                           run.unsent ? fmt::format(", {} not sent", run.unsent) : "");
  for (const auto& [kind, message] : s.first_error)
    std::cout << fmt::format("    {}, the first: {}\n", kind, message);
  std::cout << fmt::format("  throughput  {:.1f}/s answered ({:.1f}/s sent)\n", s.throughput_per_s,
                           s.offered_per_s);
  std::cout << fmt::format("  latency     from each request's {} time, 95% intervals\n",
                           o.concurrency > 0 ? "send" : "scheduled");
  for (const auto& p : s.latency) {
    const std::string ci = std::isnan(p.ci.low) || std::isnan(p.ci.high)
                               ? "too few requests for an interval"
                               : fmt::format("{} - {}", ms(p.ci.low), ms(p.ci.high));
    std::cout << fmt::format("    p{:<6g} {:>10}   ({})\n", p.quantile * 100, ms(p.value_s), ci);
  }
  if (!s.by_length.empty()) {
    std::cout << "  by length   the answered requests in quarters by length\n";
    for (const auto& l : s.by_length)
      std::cout << fmt::format("    {:>4}-{:<4} {:>6} ok   p50 {:>10}   p99 {:>10}\n", l.low, l.high,
                               l.ok, ms(l.p50_s), ms(l.p99_s));
  }
  std::cout << fmt::format("  generator   sent late by {} (median), {} (max)\n",
                           ms(s.median_send_lag_s), ms(s.max_send_lag_s));
  if (s.verdict)
    std::cout << fmt::format("  objective   {}: {} ({})\n", s.verdict->objective.text,
                             s.verdict->valid ? "VALID" : "INVALID", s.verdict->reason);
}

int run_load_command(LoadFlags& f) {
  LoadOptions o = f.options;
  o.url = f.url;
  o.arrivals.process = parse_arrival_process(f.arrivals);
  o.arrivals.duration_s = parse_duration(f.duration, "--duration");
  if (o.concurrency == 0) {
    if (!(f.rate > 0))
      throw UsageError(
          "load: expected --rate R (requests/s, open loop) or "
          "--concurrency N (closed loop)");
    o.arrivals.rate_per_s = f.rate;
  } else if (f.rate > 0) {
    throw UsageError("--rate and --concurrency: choose one (open or closed loop)");
  }
  std::optional<LatencyObjective> objective;
  if (!f.slo.empty()) objective = parse_latency_objective(f.slo);
  if (!f.dim.empty()) o.lengths = parse_dim_option(f.dim).distribution;
  validate(o);
  if (objective) check_slo_can_hold(*objective, o);
  ProgressBar bar(!f.quiet && isatty(STDERR_FILENO));
  const LoadRun run =
      run_load(o, [&](double fraction) { bar.update("load", fraction, o.arrivals.duration_s); });
  bar.finish();
  if (run.records.empty())
    throw RuntimeFailure("load: no request was sent" +
                         (run.stopped.empty() ? std::string() : ": " + run.stopped));
  const LoadSummary s = summarize_load(run.records, run.duration_s, objective);
  if (f.json) {
    nlohmann::json j = to_json(s);
    j["url"] = o.url;
    j["model"] = o.model;
    j["mode"] = o.concurrency > 0 ? "closed" : "open";
    j["unsent"] = run.unsent;
    if (!run.stopped.empty()) j["stopped"] = run.stopped;
    std::cout << j.dump(2) << "\n";
  } else {
    print_summary(o, run, s);
  }
  if (!run.stopped.empty())
    throw RuntimeFailure(fmt::format("load ended early: {} ({} sent, {} ok, {} not sent)",
                                     run.stopped, s.requests, s.ok, run.unsent));
  // A refused request measures nothing: the load does not fit the server (a --dim past its MAX).
  const std::string refused = to_string(RequestOutcome::kClientError);
  if (s.errors.count(refused))
    throw WorkloadError(fmt::format(
        "load: the server refused {} of {} requests as client errors, the first with: {}; "
        "expected requests it takes",
        s.errors.at(refused), s.requests,
        s.first_error.count(refused) ? s.first_error.at(refused) : std::string("no message")));
  if (s.verdict && !s.verdict->valid) return kInvalidResult;
  return kSuccess;
}

}  // namespace

Runner add_serve_command(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  f->server.model_name.clear();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Serve a model over HTTP (the open inference protocol: KServe v2, Triton) with "
      "dynamic batching, until SIGTERM or Ctrl-C");
  cmd->add_option("model", f->model.model,
                  "A torch.export program (.pt2), a TorchScript file, builtin:NAME, or a tune's "
                  "folder (its --out, or a result saved with result.save: its winner is served, "
                  "in whatever runtime won); may come from a --config file");
  cmd->add_option("--input", f->inputs,
                  "Input spec per forward argument, batch dimension excluded (as for bench)");
  cmd->add_option("--dim", f->model.dims,
                  "A named input dimension's sizes (as for bench: S=4..512): requests vary in it "
                  "up to its MAX, a longer one is refused with 400; requests of other lengths "
                  "merge, padded, where padding was checked not to change the answers");
  add_python_module_flags(*cmd, f->model.calibration_file, f->model.python_module,
                          " (a tune's folder or winner.json names its own)");
  cmd->add_option("--config", f->config,
                  "Configuration string, or a FILE.json written by tune or report (its model and "
                  "inputs apply when not given)");
  cmd->add_option("--name", f->server.model_name,
                  "The name clients use (default: the file's stem or the built-in's name)");
  cmd->add_option("--host", f->server.host, "Address to listen on")->default_val("127.0.0.1");
  cmd->add_option("--port", f->server.port, "Port (0: any free port; the first line says which)")
      ->default_val(8000);
  cmd->add_option("--max-batch", f->server.batching.max_batch, "Requests per model call, at most")
      ->default_val(8);
  cmd->add_option("--max-queue-delay", f->max_queue_delay,
                  "How long the oldest request may wait for others (e.g. 2ms, 500us)")
      ->default_val("2ms");
  cmd->add_option("--max-tokens", f->max_tokens,
                  "Padded tokens per model call, at most (samples x the length they are padded "
                  "to; samples for a model without a --dim); a request over it alone gets 413. "
                  "0: no budget")
      ->default_val(0);
  cmd->add_option("--max-client-batch", f->max_client_batch,
                  "Samples one request may hold, at most (its first dimension); a request with "
                  "more gets 413 naming this flag. Default: 32, or the model's smallest batch "
                  "where that is larger");
  cmd->add_option("--drain-timeout", f->drain_timeout,
                  "After SIGTERM or Ctrl-C, how long queued requests and a running model call "
                  "may take to finish; past it the server exits with 143 (130 for Ctrl-C) and "
                  "says so (e.g. 10s, 500ms)")
      ->default_val("10s");
  cmd->add_option("--buckets", f->buckets,
                  "With a --dim, how requests of different lengths wait and share calls: edges "
                  "E1/E2/... (a call from one bucket), plan:K (K edges planned from the --dim's "
                  "distribution, the fewest padded tokens), one (any lengths merge, padded), or "
                  "per-length (only equal lengths share a call). Default: the padding knob's "
                  "buckets, else one");
  cmd->add_option("--shapes", f->shapes,
                  "The model call shapes prepared before the first request (each run once, or "
                  "captured as a CUDA graph with --cuda-graphs on, a call then padded up to one): "
                  "planned (the default: the shapes the --dim's lengths and the queue will bring, "
                  "the most expected first, at most 256), N (at most N), or lazy (none: a shape's "
                  "first call prepares it). A call at a shape not prepared is counted off the plan "
                  "in /metrics")
      ->default_val("planned");
  cmd->add_option("--shapes-time", f->shapes_time,
                  "The most time preparing the planned shapes may take per instance (e.g. 30s, "
                  "5m): a start spent on shapes is a start a deploy waits for; the shapes left "
                  "are said and run as they come")
      ->default_val("30s");
  cmd->add_option("--shape-memory", f->shape_memory,
                  "The memory each instance's planned shapes may take (e.g. 512M, 2G: device "
                  "memory on CUDA, resident memory on CPU); shapes past it are left out, and "
                  "said. Default: no budget");
  cmd->add_option("--max-call-memory", f->max_call_memory,
                  "The memory one model call may hold (e.g. 512M, 8G: device memory on CUDA), "
                  "measured at start-up per padded token (per sample without a --dim); calls "
                  "merge only within it, and a request past it alone gets 413 naming it. auto: "
                  "80% of the memory available at start, shared among the instances; off: no "
                  "bound")
      ->default_val("auto");
  cmd->add_option("--max-queue", f->server.batching.max_queue,
                  "Requests waiting, at most; the next gets 503 at once")
      ->default_val(256);
  cmd->add_option("--instances", f->instances,
                  "Model copies running batches in parallel, each on its own thread with "
                  "'threads' intra-op threads (default: cores / instances)")
      ->default_val(1);
  cmd->add_option("--max-body", f->server.max_body_bytes,
                  "Largest request body in bytes (413 above)")
      ->default_val(64u << 20);
  cmd->add_option("--device", f->model.device, "auto, cpu, cuda or cuda:N")->default_val("auto");
  cmd->add_flag("--no-model", f->no_model,
                "Answer every request with its inputs, without a model: what the HTTP path and the "
                "queue cost by themselves (needs --input)");
  add_knob_flags(*cmd, inference_knobs(), f->knob_values);
  return [cmd, f]() -> int {
    if (!cmd->parsed()) return -1;
    return run_serve(*f);
  };
}

Runner add_load_command(CLI::App& app) {
  auto f = std::make_shared<LoadFlags>();
  CLI::App* cmd = app.add_subcommand(
      "load",
      "Send inference requests to a server at scheduled times (open loop) or from N "
      "clients (closed loop), and report throughput and latency percentiles");
  cmd->add_option("url", f->url, "The server, e.g. http://127.0.0.1:8000")->required();
  cmd->add_option("--model", f->options.model, "The served model's name")->required();
  cmd->add_option("--rate", f->rate, "Open loop: requests a second");
  cmd->add_option("--arrivals", f->arrivals, "Open loop: poisson or constant")
      ->default_val("poisson");
  cmd->add_option("--concurrency", f->options.concurrency,
                  "Closed loop: clients sending back to back");
  cmd->add_option("--duration", f->duration, "How long to send (e.g. 60s, 2m)")->default_val("10s");
  cmd->add_option("--dim", f->dim,
                  "NAME=DISTRIBUTION (as for bench: S=lognormal:40:0.9:4..512): each request's "
                  "varying dimensions take a length drawn from it; the summary adds latency by "
                  "length");
  cmd->add_option("--inputs-file", f->options.inputs_file,
                  "Real samples to send (as bench reads them: a torch.save list of tuples, or of "
                  "dicts of forward's argument -> tensor, without the batch dimension), each a "
                  "request of one sample, in the file's order; default: values the server's "
                  "metadata says (token ids of the vocabulary, a mask of ones), else random");
  cmd->add_option("--slo", f->slo,
                  "Latency objective, e.g. p99=50ms: VALID when enough requests show it holds "
                  "at 99% confidence (exit 3 when not)");
  cmd->add_option("--connections", f->options.connections,
                  "Open loop: clients sending on schedule (a request waits for a free one, but "
                  "its latency still counts from its scheduled time)")
      ->default_val(64);
  cmd->add_option("--timeout", f->options.timeout_s, "Seconds before a request is a timeout")
      ->default_val(10);
  cmd->add_option("--seed", f->options.arrivals.seed, "Seed of the schedule and of the inputs")
      ->default_val(0);
  cmd->add_flag(
      "--json-data", [f](std::int64_t) { f->options.binary = false; },
      "Send inputs as JSON numbers instead of binary data");
  cmd->add_flag("--json", f->json, "Print the summary as JSON");
  cmd->add_flag("--quiet", f->quiet, "No progress bar");
  return [cmd, f]() -> int {
    if (!cmd->parsed()) return -1;
    return run_load_command(*f);
  };
}

}  // namespace torchperf::cli

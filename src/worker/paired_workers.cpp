#include "torchperf/worker/paired_workers.h"

#include <cmath>
#include <memory>

#include "torchperf/bench/measurement_json.h"
#include "torchperf/config/apply.h"
#include "torchperf/error.h"
#include "torchperf/measure/machine_load.h"
#include "torchperf/worker/protocol.h"
#include "torchperf/worker/python_worker.h"
#include "torchperf/worker/worker.h"

namespace torchperf {
namespace {

using nlohmann::json;

std::string log_path(const WorkerRun& run, const std::string& name) {
  return run.log_dir + "/" + run.log_prefix + "-" + name + ".log";
}

// One side of a comparison, living in its own worker: the C++ worker, or the Python worker
// (runtime=python). The supervisor's sampler alternates their blocks.
class RemoteSide {
 public:
  virtual ~RemoteSide() = default;
  // Each block is timed with the peer stopped: an idle process competes for the cores otherwise
  // (OpenMP threads with OMP_WAIT_POLICY=active spin while they wait: 1.96x on ResNet-18 at 2
  // threads on 2 cores, against the peer, before the peer was stopped).
  virtual TimedRun timed_run(RemoteSide& peer) = 0;
  virtual Measurement finish(const SampleSet& samples) = 0;
  virtual WorkerSession& worker() = 0;
  // The Python side it runs, or null (a C++ side).
  virtual PythonSide* python() { return nullptr; }
};

class CppSide final : public RemoteSide {
 public:
  CppSide(const BenchOptions& options, const Configuration& config, const WorkerRun& run,
          const std::string& name)
      : name_(name + " (" + (config.empty() ? std::string("baseline") : config.to_string()) + ")"),
        log_(log_path(run, name)),
        timeout_s_(run.limits.time_limit_s),
        worker_(run.executable, worker_environment(config), run.limits, log_, run.tick) {
    ask(to_request(SideRequest{options, config.to_string()}), "preparing");
  }

  TimedRun timed_run(RemoteSide& peer) override {
    TimedRun t;
    t.block = [this, &peer](std::size_t iterations) {
      struct Paused {
        WorkerSession& w;
        explicit Paused(WorkerSession& worker) : w(worker) { w.pause(); }
        ~Paused() { w.resume(); }
      } paused(peer.worker());
      const auto answer =
          from_reply<BlockReply>(ask(to_request(BlockRequest{iterations}), "timing"), "a block");
      return Nanoseconds(static_cast<std::int64_t>(std::llround(answer.ns)));
    };
    return t;
  }

  Measurement finish(const SampleSet& samples) override {
    return from_reply<FinishReply>(ask(to_request(FinishRequest{samples}), "finishing"), "finish")
        .measurement;
  }
  WorkerSession& worker() override { return worker_; }

 private:
  json ask(const json& request, const std::string& doing) {
    return ask_side(worker_, request, timeout_s_, "side " + name_, log_, doing);
  }

  std::string name_, log_;
  double timeout_s_;
  WorkerSession worker_;
};

class PySide final : public RemoteSide {
 public:
  PySide(const BenchOptions& options, const Configuration& config, const WorkerRun& run,
         const std::string& name, PythonSide* host)
      : side_(options, config, run, name, nullptr, host),
        sampling_(python_sampling(sampling_options(options))) {}
  TimedRun timed_run(RemoteSide& peer) override { return side_.timed_run(&peer.worker()); }
  Measurement finish(const SampleSet& samples) override {
    return side_.finish(samples, sampling_, true);
  }
  WorkerSession& worker() override { return side_.worker(); }
  PythonSide* python() override { return &side_; }

 private:
  PythonSide side_;
  SamplingOptions sampling_;
};

// host: the side made first. A tune's pair (its Python sides drawn from the points' pool) of one
// process state runs both Python sides in one worker; bench --vs keeps a worker per side.
std::unique_ptr<RemoteSide> remote_side(const BenchOptions& options, const Configuration& config,
                                        const WorkerRun& run, const std::string& name,
                                        RemoteSide* host = nullptr) {
  if (worker_of(config) == RuntimeWorker::kPython)
    return std::make_unique<PySide>(options, config, run, name,
                                    host && run.python_pool ? host->python() : nullptr);
  return std::make_unique<CppSide>(options, config, run, name);
}

}  // namespace

json ask_side(WorkerSession& worker, const json& request, double timeout_s,
              const std::string& side, const std::string& log, const std::string& doing) {
  json answer;
  try {
    answer = worker.ask(request, timeout_s);
  } catch (const WorkerFailure& e) {
    if (e.ending == Ending::kStopped) throw Interrupted("interrupted");
    if (e.ending == Ending::kOutOfMemory)
      throw ResourceLimit(side + ": the worker " + e.what() + " (log: " + log + ")");
    throw RuntimeFailure(side + ": the " + e.what() + " (log: " + log + ")");
  }
  if (!answer.value("ok", false))
    rethrow_worker_error(answer.at("error"), side + " failed while " + doing);
  return answer;
}

BenchResult measure_in_worker(const BenchOptions& options, const WorkerRun& run) {
  validate(options);
  const json request = to_request(MeasureRequest{options, options.config.to_string()});
  const std::string log = log_path(run, "measure");
  const WorkerOutcome out = run_worker_process(run.executable, request, run.limits, log, run.tick,
                                               worker_environment(options.config));
  if (out.ending != Ending::kAnswered) {
    if (out.ending == Ending::kStopped) throw Interrupted("interrupted");
    throw RuntimeFailure("the worker " + out.message + " (log: " + log + ")");
  }
  if (!out.response.value("ok", false))
    rethrow_worker_error(out.response.at("error"), "measuring in a worker");
  return from_reply<MeasureReply>(out.response, "measure").result;
}

BenchResult compare_in_workers(const BenchOptions& requested, const WorkerRun& run,
                               TimeSource& time, const BenchProgress& progress) {
  validate(requested);
  if (!requested.vs) throw UsageError("compare_in_workers: no configuration to compare with");
  const BenchOptions options = with_shared_batch(requested);
  BenchResult result;
  result.environment = capture_environment();
  if (progress) progress("reference", 0);
  const auto a = remote_side(options, options.config, run, "a");
  const auto b = remote_side(options, *options.vs, run, "b", a.get());
  // A pair with a Python side samples in its longer blocks, both sides alike.
  const bool python = worker_of(options.config) == RuntimeWorker::kPython ||
                      worker_of(*options.vs) == RuntimeWorker::kPython;
  Sampler sampler(time, python ? python_sampling(sampling_options(options))
                               : sampling_options(options));
  // Other work read between rounds: a head-to-head whose rounds saw a busy machine in some and a
  // quiet one in others is measured again by tune.
  sampler.set_load_probe(read_cpu_times);
  const PairedSampleSet paired =
      sampler.measure_paired(a->timed_run(*b), b->timed_run(*a), [&](double f) {
        if (progress) progress("warm-up and measuring", f);
      });
  const bool shared = b->python() && b->python()->shares_worker();
  result.comparison = compare_sides(a->finish(paired.a), b->finish(paired.b), paired, !shared);
  return result;
}

}  // namespace torchperf

#include "torchperf/cluster/job_runner.h"

#include <filesystem>

#include "torchperf/cluster/machine_class.h"
#include "torchperf/config/configuration.h"

namespace torchperf {

JobEnd JobRunner::run(const NodeJob& job) {
  const std::string ticket = start(job);
  for (;;)
    for (JobEnd& end : wait(0.05))
      if (end.ticket == ticket) return std::move(end);
}

LocalJobRunner::LocalJobRunner(TimeSource& time, std::string executable, std::string log_dir,
                               WatchLimits limits, JobTick tick)
    : JobRunner(std::move(tick)),
      time_(time),
      executable_(std::move(executable)),
      log_dir_(std::move(log_dir)),
      limits_(limits) {
  machines_.environment = capture_environment();
  machines_.machine_class = machine_class_of(machines_.environment);
  load_.sample();
}

std::string LocalJobRunner::start(const NodeJob& job) {
  if (pending_) throw std::logic_error("LocalJobRunner::start: a job is already out");
  pending_ = job;
  pending_ticket_ = "job-" + std::to_string(next_ticket_++);
  return pending_ticket_;
}

std::vector<JobEnd> LocalJobRunner::wait(double) {
  if (!pending_) return {};
  const NodeJob job = std::move(*pending_);
  pending_.reset();
  JobEnd end;
  end.ticket = pending_ticket_;
  if (job.shared && job.kind != NodeJobKind::kWorker) {
    // A comparison's C++ sides start workers of their own: no idle C++ worker sits beside them.
    if (job.kind == NodeJobKind::kCompare) release();
    end.outcome = run_node_job(job, time_, tick_, &python_pool_);
    end.shared_worker = true;
    end.fresh_worker = python_pool_.started() > python_started_;
    python_started_ = python_pool_.started();
  } else if (job.shared) {
    if (!shared_) {
      std::filesystem::create_directories(log_dir_);
      shared_ = std::make_unique<SharedWorker>(executable_, log_dir_, limits_, tick_, time_);
    }
    end.outcome = shared_->measure(job.request, Configuration::parse(job.configuration),
                                   job.limits.time_limit_s);
    end.shared_worker = true;
    end.fresh_worker = !shared_->reused();
  } else {
    // An idle C++ worker, told to (omp_wait=active), spins: gone before a job of its own is
    // measured. The idle Python workers stay (they wait on their pipes, each within half of the
    // memory it could hold): closing them made bench 23's Python finalist after a C++ one, and
    // its head-to-head side, compile again (24 s each).
    release();
    end.outcome = run_node_job(job, time_, tick_);
  }
  load_.sample();
  return {std::move(end)};
}

// The Python workers stay for the confirmation's Python sides: they hold their graphs, and an
// idle one waits on its pipe (omp_wait, which spins, is a C++ runtime's knob only).
void LocalJobRunner::release() {
  if (shared_) shared_->close();
}

std::size_t LocalJobRunner::shared_workers_started() const {
  return (shared_ ? shared_->started() : 0) + python_pool_.started();
}

}  // namespace torchperf

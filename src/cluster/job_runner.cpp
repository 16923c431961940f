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
  if (job.shared && job.kind == NodeJobKind::kPython) {
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
    // An idle shared worker holds memory and, told to (omp_wait=active), spins: gone before a
    // job of its own is measured.
    release();
    end.outcome = run_node_job(job, time_, tick_);
  }
  return {std::move(end)};
}

void LocalJobRunner::release() {
  if (shared_) shared_->close();
  python_pool_.clear();
}

std::size_t LocalJobRunner::shared_workers_started() const {
  return (shared_ ? shared_->started() : 0) + python_pool_.started();
}

}  // namespace torchperf

// The ladder's head-to-head when two training configurations differ in process state (threads,
// cudnn_benchmark): each side a training session in a worker process of its own, its state set
// once, its blocks of steps run when the supervisor asks. The worker's "train-side" job.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "torchperf/config/configuration.h"
#include "torchperf/sweep/paired_workers.h"
#include "torchperf/sweep/worker.h"
#include "torchperf/sweep/worker_process.h"
#include "torchperf/train/ladder.h"
#include "torchperf/train/training_session.h"

namespace torchperf {

nlohmann::json to_json(const TrainingSpec& spec);
TrainingSpec training_spec_from_json(const nlohmann::json& j);

// The worker's "train-side" job: {"spec", "configuration", "warmup_steps", "steps",
// "settle_steps"}; each {"job": "block"} is answered with {"samples_per_s"}.
SideFactory training_side_factory();

// A training session in its own worker, for the supervisor (the ladder).
class RemoteTrainingSide {
 public:
  RemoteTrainingSide(const TrainingSpec& spec, const Configuration& config,
                     const HeadToHeadOptions& options, std::size_t warmup_steps,
                     const WorkerRun& run, const std::string& name);
  // One block's throughput: settle steps, then timed steps, in the worker.
  double block();

 private:
  std::string name_, log_;
  double timeout_s_;
  WorkerSession worker_;
};

}  // namespace torchperf

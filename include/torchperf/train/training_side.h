// The ladder's head-to-head when two training configurations differ in process state (threads,
// cudnn_benchmark): each side a training session in a worker process of its own, its state set
// once, its blocks of steps run when the supervisor asks. The worker's "train-side" job.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "torchperf/config/configuration.h"
#include "torchperf/train/ladder.h"
#include "torchperf/train/training_session.h"
#include "torchperf/worker/paired_workers.h"
#include "torchperf/worker/protocol.h"
#include "torchperf/worker/worker.h"
#include "torchperf/worker/worker_process.h"

namespace torchperf {

nlohmann::json to_json(const TrainingSpec& spec);
TrainingSpec training_spec_from_json(const nlohmann::json& j);
inline nlohmann::json wire_value(const TrainingSpec& spec) { return to_json(spec); }
inline void read_wire(const nlohmann::json& j, TrainingSpec& spec) {
  spec = training_spec_from_json(j);
}
inline std::string wire_type(const TrainingSpec*) { return "training-spec"; }

// The worker's "train-side" job (protocol.h's messages): ready with a SideReady, then each block
// request answered with the block's throughput.
struct TrainSideRequest {
  static constexpr const char* kJob = "train-side";
  TrainingSpec spec;
  std::string configuration;
  std::size_t warmup_steps = 0;
  std::size_t steps = 0;
  std::size_t settle_steps = 0;
  template <typename V>
  void fields(V& v) {
    v("spec", spec);
    v("configuration", configuration);
    v("warmup_steps", warmup_steps);
    v("steps", steps);
    v("settle_steps", settle_steps);
  }
};
struct TrainBlockRequest {  // a block is the request's steps
  static constexpr const char* kJob = "block";
  template <typename V>
  void fields(V&) {}
};
struct TrainBlockReply {
  double samples_per_s = 0;
  template <typename V>
  void fields(V& v) {
    v("samples_per_s", samples_per_s);
  }
};
SideFactory training_side_factory();
// The train-side job's entries of the protocol's schema (`torchperf __protocol`).
void add_training_side_schema(nlohmann::json& schema);

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

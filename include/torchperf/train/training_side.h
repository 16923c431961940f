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
  static constexpr const char* kJob = "train-block";
  template <typename V>
  void fields(V&) {}
};
struct TrainFinishRequest {  // the side's end (its worker then exits)
  static constexpr const char* kJob = "train-finish";
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
// The Python training worker's job (python/torchperf/train_worker.py): the step with every
// training knob, built from the model's Python definition, for step=eager | compile | ….
struct PythonTrainSideRequest {
  static constexpr const char* kJob = "python-train-side";
  std::string model, data_source;
  std::int64_t image_size = 0;
  std::string loss, optimizer;
  double learning_rate = 0;
  std::string device, grad_scaler, step;
  std::int64_t threads = 1, batch = 1;
  bool channels_last = false, cudnn_benchmark = false;
  std::int64_t workers = 0, prefetch = 2;
  bool pin_memory = false, non_blocking = false;
  std::string transfer, amp;
  bool set_to_none = false;
  std::size_t warmup_steps = 0, steps = 0, settle_steps = 0;
  std::int64_t accumulate = 1;
  bool no_sync = false;
  std::string checkpoint = "off";
  std::int64_t memory_cap_bytes = 0;
  std::int64_t bucket_mb = 25;
  bool gradient_as_bucket_view = false, static_graph = false, broadcast_buffers = true;
  std::string find_unused_parameters = "auto";
  // The ranks (torchperf.rank_group's launcher reads these; one process ignores them).
  std::int64_t nproc = 1, nnodes = 1, node_rank = 0;
  std::string rdzv_endpoint;
  double collective_timeout_s = 120, join_timeout_s = 120;
  std::string rank_log_dir;
  template <typename V>
  void fields(V& v) {
    v("model", model);
    v("data_source", data_source);
    v("image_size", image_size);
    v("loss", loss);
    v("optimizer", optimizer);
    v("learning_rate", learning_rate);
    v("device", device);
    v("grad_scaler", grad_scaler);
    v("step", step);
    v("threads", threads);
    v("batch", batch);
    v("channels_last", channels_last);
    v("cudnn_benchmark", cudnn_benchmark);
    v("workers", workers);
    v("prefetch", prefetch);
    v("pin_memory", pin_memory);
    v("non_blocking", non_blocking);
    v("transfer", transfer);
    v("amp", amp);
    v("set_to_none", set_to_none);
    v("warmup_steps", warmup_steps);
    v("steps", steps);
    v("settle_steps", settle_steps);
    v("accumulate", accumulate);
    v("no_sync", no_sync);
    v("checkpoint", checkpoint);
    v("memory_cap_bytes", memory_cap_bytes);
    v("bucket_mb", bucket_mb);
    v("gradient_as_bucket_view", gradient_as_bucket_view);
    v("static_graph", static_graph);
    v("broadcast_buffers", broadcast_buffers);
    v("find_unused_parameters", find_unused_parameters);
    v("nproc", nproc);
    v("nnodes", nnodes);
    v("node_rank", node_rank);
    v("rdzv_endpoint", rdzv_endpoint);
    v("collective_timeout_s", collective_timeout_s);
    v("join_timeout_s", join_timeout_s);
    v("rank_log_dir", rank_log_dir);
  }
};
struct PythonTrainSideReady {
  double setup_ms = 0;
  double compile_s = -1;  // the first step's time under torch.compile (it compiles), else -1
  std::string torch;
  std::int64_t threads = 0;
  std::int64_t world_size = 1;
  std::int64_t unused_parameters = 0;    // DDP: parameters a step leaves without a gradient
  std::int64_t checkpointed_blocks = 0;  // blocks the checkpoint knob wrapped
  // With a memory cap: bytes a forward keeps for backward, as configured and with every repeated
  // block checkpointed (-1: not measured, or no blocks).
  std::int64_t activation_bytes = -1;
  std::int64_t checkpointed_activation_bytes = -1;
  bool followed = false;  // a node that does not drive: its ranks ran and ended
  template <typename V>
  void fields(V& v) {
    v("setup_ms", setup_ms);
    v("compile_s", compile_s);
    v("torch", torch);
    v("threads", threads);
    v("world_size", world_size);
    v("unused_parameters", unused_parameters);
    v("checkpointed_blocks", checkpointed_blocks);
    v("activation_bytes", activation_bytes);
    v("checkpointed_activation_bytes", checkpointed_activation_bytes);
    v("followed", followed);
  }
};
struct TrainBreakdownRequest {  // steps timed phase by phase (the device synchronised)
  static constexpr const char* kJob = "breakdown";
  std::size_t steps = 0;
  template <typename V>
  void fields(V& v) {
    v("steps", steps);
  }
};

struct TrainBreakdownReply {
  std::vector<nlohmann::json> steps;  // each: ns (per phase), total_ns, samples, loss, stepped, start_us
  std::int64_t peak_memory_bytes = -1;      // -1: not measured
  std::int64_t memory_capacity_bytes = -1;  // -1: the supervisor's machine's is taken
  // DDP: each rank's own (rank, host, steps, peak_memory_bytes); `steps` are then the slowest
  // rank's, with every rank's samples.
  std::vector<nlohmann::json> ranks;
  template <typename V>
  void fields(V& v) {
    v("steps", steps);
    v("peak_memory_bytes", peak_memory_bytes);
    v("memory_capacity_bytes", memory_capacity_bytes);
    v("ranks", ranks);
  }
};

SideFactory training_side_factory();
// The train-side job's entries of the protocol's schema (`torchperf __protocol`).
void add_training_side_schema(nlohmann::json& schema);

// A training session in its own worker, for the supervisor (the ladder): torchperf's own worker
// (step=torchscript) or the Python training worker (step=eager, compile, …).
class RemoteTrainingSide {
 public:
  // step=torchscript only: the C++ worker's train-side job.
  RemoteTrainingSide(const TrainingSpec& spec, const Configuration& config,
                     const HeadToHeadOptions& options, std::size_t warmup_steps,
                     const WorkerRun& run, const std::string& name);
  // Either runtime, as the configuration's step knob says.
  RemoteTrainingSide(const TrainingContext& context, const Configuration& config,
                     const HeadToHeadOptions& options, std::size_t warmup_steps,
                     const WorkerRun& run, const std::string& name);
  ~RemoteTrainingSide();
  // One block's throughput: settle steps, then timed steps, in the worker.
  double block();
  // Steps timed phase by phase, with the peak memory (Python worker only).
  Breakdown breakdown(std::size_t steps);
  // The side's end, answered: ranks on other nodes then end with theirs, where a side dropped
  // without it ends its world as a crash would.
  void finish();
  // The warm-up's first step under torch.compile (which compiles forward and backward), or -1.
  double compile_s() const { return compile_s_; }
  bool in_python() const { return python_; }
  // What the Python step said when it was ready (ranks, unused parameters, activation bytes).
  const PythonTrainSideReady& facts() const { return facts_; }

 private:
  RemoteTrainingSide(const Configuration& config, const WorkerRun& run, const std::string& name);
  void start_in_cpp(const TrainingSpec& spec, const Configuration& config,
                    const HeadToHeadOptions& options, std::size_t warmup_steps,
                    const WorkerRun& run);
  nlohmann::json ask(const nlohmann::json& request, const std::string& doing);
  std::string name_, log_;
  double timeout_s_ = 0, compile_s_ = -1;
  bool python_ = false;
  std::int64_t memory_cap_bytes_ = 0;
  PythonTrainSideReady facts_;
  std::unique_ptr<WorkerSession> worker_;
};

// The plan a configuration resolves to for this context (ConfigError where a knob does not apply).
TrainingPlan plan_of(const TrainingContext& context, const Configuration& config);

}  // namespace torchperf

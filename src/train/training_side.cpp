#include "torchperf/train/training_side.h"


#include <algorithm>

#include "torchperf/config/apply.h"
#include "torchperf/error.h"
#include "torchperf/measure/memory_probe.h"
#include "torchperf/models/python_side.h"

namespace torchperf {
namespace {

using nlohmann::json;

class TrainingSideServer : public SideServer {
 public:
  explicit TrainingSideServer(const json& request)
      : TrainingSideServer(from_request<TrainSideRequest>(request)) {}
  explicit TrainingSideServer(const TrainSideRequest& r)
      : context_(TrainingContext::open(r.spec)),
        session_(context_, Configuration::parse(r.configuration)) {
    options_.steps = r.steps;
    options_.settle_steps = r.settle_steps;
    // Worker knobs (none in train today) and this side's process state: once, for every block.
    restore_ = session_.enter();
    for (std::size_t i = 0; i < r.warmup_steps; ++i) session_.step(false);
  }
  ~TrainingSideServer() override { restore_(); }
  const char* block_job() const override { return TrainBlockRequest::kJob; }
  const char* finish_job() const override { return TrainFinishRequest::kJob; }
  json ready() override { return to_reply(SideReady{session_.configuration().to_string()}); }
  json block(const json& request) override {
    from_request<TrainBlockRequest>(request);
    return to_reply(TrainBlockReply{block_throughput(session_, options_)});
  }
  json finish(const json& request) override {
    from_request<TrainFinishRequest>(request);
    return to_reply(EmptyReply{});
  }

 private:
  TrainingContext context_;
  TrainingSession session_;
  HeadToHeadOptions options_;
  Undo restore_ = [] {};
};

}  // namespace

json to_json(const TrainingSpec& s) {
  return {{"model", s.model},
          {"data",
           {{"source", s.data.source},
            {"image_size", s.data.image_size},
            {"seed", s.data.seed},
            {"strict", s.data.strict}}},
          {"loss", s.loss},
          {"optimizer", s.optimizer},
          {"learning_rate", s.learning_rate},
          {"device", s.device},
          {"grad_scaler", s.grad_scaler},
          {"seed", s.seed}};
}

TrainingSpec training_spec_from_json(const json& j) {
  TrainingSpec s;
  s.model = j.at("model").get<std::string>();
  const json& d = j.at("data");
  s.data.source = d.at("source").get<std::string>();
  s.data.image_size = d.at("image_size").get<int>();
  s.data.seed = d.at("seed").get<std::uint64_t>();
  s.data.strict = d.at("strict").get<bool>();
  s.loss = j.at("loss").get<std::string>();
  s.optimizer = j.at("optimizer").get<std::string>();
  s.learning_rate = j.at("learning_rate").get<double>();
  s.device = j.at("device").get<std::string>();
  s.grad_scaler = j.at("grad_scaler").get<std::string>();
  s.seed = j.at("seed").get<std::uint64_t>();
  return s;
}

void add_training_side_schema(json& schema) {
  add_to_schema<TrainSideRequest, SideReady>(schema, "ready");
  add_to_schema<PythonTrainSideRequest, PythonTrainSideReady>(schema, "ready");
  add_to_schema<TrainBlockRequest, TrainBlockReply>(schema);
  add_to_schema<TrainBreakdownRequest, TrainBreakdownReply>(schema);
  add_to_schema<TrainFinishRequest, EmptyReply>(schema);
}

SideFactory training_side_factory() {
  return [](const json& request) -> std::unique_ptr<SideServer> {
    return std::make_unique<TrainingSideServer>(request);
  };
}

TrainingPlan plan_of(const TrainingContext& context, const Configuration& config) {
  TrainingPlan plan = plan_training(resolve_training(config, context.traits));
  // Knobs that only the Python step has, and pairs that PyTorch refuses together.
  if (!plan.in_python() && (plan.accumulate > 1 || plan.checkpoint != "off"))
    throw ConfigError(std::string(plan.accumulate > 1 ? "accumulate=" + std::to_string(plan.accumulate)
                                                      : "checkpoint=" + plan.checkpoint) +
                      " runs in the Python step (step=eager or compile), not step=" + plan.step);
  if (plan.checkpoint.rfind("budget:", 0) == 0 && !plan.compiled())
    throw ConfigError("checkpoint=" + plan.checkpoint +
                      ": the activation memory budget is torch.compile's (step=compile); in eager "
                      "use blocks or every:N");
  if (plan.ddp.static_graph && plan.no_sync && plan.accumulate > 1)
    throw ConfigError("static_graph=on with no_sync=on: DDP's static graph does not take steps "
                      "whose all-reduce is skipped (its reducer asserts); choose one");
  return plan;
}

RemoteTrainingSide::RemoteTrainingSide(const Configuration& config, const WorkerRun& run,
                                       const std::string& name)
    : name_(name + " (" + (config.empty() ? std::string("defaults") : config.to_string()) + ")"),
      log_(run.log_dir + "/" + run.log_prefix + "-" + name + ".log"),
      timeout_s_(run.limits.time_limit_s) {}

void RemoteTrainingSide::start_in_cpp(const TrainingSpec& spec, const Configuration& config,
                                      const HeadToHeadOptions& options,
                                      std::size_t warmup_steps, const WorkerRun& run) {
  worker_ = std::make_unique<WorkerSession>(run.executable, worker_environment(config), run.limits,
                                            log_, run.tick);
  ask(to_request(TrainSideRequest{spec, config.to_string(), warmup_steps, options.steps,
                                  options.settle_steps}),
      "preparing");
}

RemoteTrainingSide::RemoteTrainingSide(const TrainingSpec& spec, const Configuration& config,
                                       const HeadToHeadOptions& options,
                                       std::size_t warmup_steps, const WorkerRun& run,
                                       const std::string& name)
    : RemoteTrainingSide(config, run, name) {
  start_in_cpp(spec, config, options, warmup_steps, run);
}

RemoteTrainingSide::RemoteTrainingSide(const TrainingContext& context, const Configuration& config,
                                       const HeadToHeadOptions& options,
                                       std::size_t warmup_steps, const WorkerRun& run,
                                       const std::string& name)
    : RemoteTrainingSide(config, run, name) {
  const TrainingPlan plan = plan_of(context, config);
  if (!plan.in_python()) {
    start_in_cpp(context.spec, config, options, warmup_steps, run);
    return;
  }
  python_ = true;
  PythonTrainSideRequest r;
  r.model = context.spec.model;
  r.data_source = context.spec.data.source;
  r.image_size = context.spec.data.image_size;
  r.loss = context.loss;
  r.optimizer = context.spec.optimizer;
  r.learning_rate = context.learning_rate(plan);
  r.device = context.device;
  r.grad_scaler = context.spec.grad_scaler;
  r.step = plan.step;
  r.threads = plan.threads;
  r.batch = plan.batch;
  r.channels_last = plan.channels_last;
  r.cudnn_benchmark = plan.cudnn_benchmark;
  r.workers = plan.workers;
  r.prefetch = plan.prefetch;
  r.pin_memory = plan.pin_memory;
  r.non_blocking = plan.non_blocking;
  r.transfer = to_string(plan.transfer);
  r.amp = to_string(plan.amp);
  r.set_to_none = plan.set_to_none;
  r.warmup_steps = std::max<std::size_t>(warmup_steps, 1);  // the first step compiles
  r.steps = options.steps;
  r.settle_steps = options.settle_steps;
  r.accumulate = plan.accumulate;
  r.no_sync = plan.no_sync;
  r.checkpoint = plan.checkpoint;
  r.memory_cap_bytes = memory_cap_bytes_ = context.spec.memory_cap_bytes;
  r.bucket_mb = plan.ddp.bucket_mb;
  r.gradient_as_bucket_view = plan.ddp.gradient_as_bucket_view;
  r.static_graph = plan.ddp.static_graph;
  r.broadcast_buffers = plan.ddp.broadcast_buffers;
  r.find_unused_parameters = plan.ddp.find_unused_parameters;
  const RankSpec& ranks = context.spec.ranks;
  r.nproc = ranks.nproc;
  r.nnodes = ranks.nnodes;
  r.node_rank = ranks.node_rank;
  r.rdzv_endpoint = ranks.rdzv_endpoint;
  r.collective_timeout_s = ranks.collective_timeout_s;
  r.join_timeout_s = ranks.join_timeout_s;
  // Each rank's log and error beside this side's own log: an error names the failed rank's.
  r.rank_log_dir = log_.substr(0, log_.size() - 4) + "-ranks";
  // Ranks: torch's launcher, driven through torchperf.rank_group; one process: the step itself.
  const std::string module = ranks.distributed() ? "torchperf.rank_group" : "torchperf.train_worker";
  worker_ = std::make_unique<WorkerSession>(python_interpreter(),
                                            with_python_path(worker_environment(config)),
                                            run.limits, log_,
                                            run.tick,
                                            std::vector<std::string>{"-m", module});
  facts_ = from_reply<PythonTrainSideReady>(ask(to_request(r), "preparing"), "python-train-side");
  compile_s_ = facts_.compile_s;
}

RemoteTrainingSide::~RemoteTrainingSide() = default;

nlohmann::json RemoteTrainingSide::ask(const nlohmann::json& request, const std::string& doing) {
  return ask_side(*worker_, request, timeout_s_, "training side " + name_, log_, doing);
}

double RemoteTrainingSide::block() {
  return from_reply<TrainBlockReply>(ask(to_request(TrainBlockRequest{}), "running a block"),
                                     "a training block")
      .samples_per_s;
}

void RemoteTrainingSide::finish() {
  ask(to_request(TrainFinishRequest{}), "finishing");
}

Breakdown RemoteTrainingSide::breakdown(std::size_t steps) {
  if (!python_) throw RuntimeFailure("a breakdown in a worker is the Python training worker's");
  const auto reply = from_reply<TrainBreakdownReply>(
      ask(to_request(TrainBreakdownRequest{steps}), "timing phases"), "a breakdown");
  auto step_times = [](const std::vector<json>& steps) {
    std::vector<StepTimes> times;
    for (const json& j : steps) {
      StepTimes t;
      const auto ns = j.at("ns").get<std::vector<double>>();
      for (std::size_t i = 0; i < kPhaseCount && i < ns.size(); ++i) t.ns[i] = ns[i];
      t.total_ns = j.at("total_ns").get<double>();
      t.samples = j.at("samples").get<std::int64_t>();
      t.loss = j.at("loss").get<double>();
      t.stepped = j.at("stepped").get<bool>();
      t.start_us = j.at("start_us").get<std::int64_t>();
      times.push_back(t);
    }
    return times;
  };
  Breakdown b;
  try {
    b = summarize_steps(step_times(reply.steps));
    for (const json& r : reply.ranks)
      b.ranks.push_back(summarize_rank(r.at("rank").get<int>(), r.at("host").get<std::string>(),
                                       step_times(r.at("steps").get<std::vector<json>>()),
                                       r.at("peak_memory_bytes").get<std::int64_t>()));
  } catch (const json::exception& e) {
    throw WorkerProtocolError("training side " + name_ + ": a breakdown reply: " + e.what());
  }
  std::sort(b.ranks.begin(), b.ranks.end(),
            [](const RankBreakdown& x, const RankBreakdown& y) { return x.rank < y.rank; });
  b.straggler_gap_ns = straggler_gap_ns(b.ranks);
  b.peak_memory_bytes = reply.peak_memory_bytes;
  b.memory_capacity_bytes = reply.memory_capacity_bytes;
  // A cap is the capacity the step has (the device's own, on CUDA, when smaller).
  if (memory_cap_bytes_ > 0 &&
      (b.memory_capacity_bytes < 0 || memory_cap_bytes_ < b.memory_capacity_bytes))
    b.memory_capacity_bytes = memory_cap_bytes_;
  if (b.memory_capacity_bytes < 0) b.memory_capacity_bytes = memory_capacity_bytes();
  b.activation_bytes = facts_.activation_bytes;
  b.checkpointed_activation_bytes = facts_.checkpointed_activation_bytes;
  if (facts_.world_size > 1) b.unused_parameters = static_cast<int>(facts_.unused_parameters);
  return b;
}

}  // namespace torchperf

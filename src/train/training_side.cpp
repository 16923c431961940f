#include "torchperf/train/training_side.h"


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
  return plan_training(resolve_training(config, context.traits));
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
  worker_ = std::make_unique<WorkerSession>(python_interpreter(),
                                            with_python_path(worker_environment(config)),
                                            run.limits, log_,
                                            run.tick,
                                            std::vector<std::string>{"-m", "torchperf.train_worker"});
  compile_s_ = from_reply<PythonTrainSideReady>(ask(to_request(r), "preparing"),
                                                "python-train-side")
                   .compile_s;
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

Breakdown RemoteTrainingSide::breakdown(std::size_t steps) {
  if (!python_) throw RuntimeFailure("a breakdown in a worker is the Python training worker's");
  const auto reply = from_reply<TrainBreakdownReply>(
      ask(to_request(TrainBreakdownRequest{steps}), "timing phases"), "a breakdown");
  std::vector<StepTimes> times;
  try {
    for (const json& j : reply.steps) {
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
  } catch (const json::exception& e) {
    throw WorkerProtocolError("training side " + name_ + ": a breakdown reply: " + e.what());
  }
  Breakdown b = summarize_steps(times);
  b.peak_memory_bytes = reply.peak_memory_bytes;
  b.memory_capacity_bytes = reply.memory_capacity_bytes;
  if (b.memory_capacity_bytes < 0) b.memory_capacity_bytes = memory_capacity_bytes();
  return b;
}

}  // namespace torchperf

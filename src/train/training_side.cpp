#include "torchperf/train/training_side.h"

#include "torchperf/config/apply.h"
#include "torchperf/error.h"

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
  json ready() override { return to_reply(SideReady{session_.configuration().to_string()}); }
  json block(const json& request) override {
    from_request<TrainBlockRequest>(request);
    return to_reply(TrainBlockReply{block_throughput(session_, options_)});
  }
  json finish(const json&) override { return to_reply(EmptyReply{}); }

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
  json block = json::object();
  WireSchema b(block);
  TrainBlockReply{}.fields(b);
  schema["jobs"][TrainSideRequest::kJob]["block_reply"] = block;
}

SideFactory training_side_factory() {
  return [](const json& request) -> std::unique_ptr<SideServer> {
    return std::make_unique<TrainingSideServer>(request);
  };
}

RemoteTrainingSide::RemoteTrainingSide(const TrainingSpec& spec, const Configuration& config,
                                       const HeadToHeadOptions& options,
                                       std::size_t warmup_steps, const WorkerRun& run,
                                       const std::string& name)
    : name_(name + " (" + (config.empty() ? std::string("defaults") : config.to_string()) + ")"),
      log_(run.log_dir + "/" + run.log_prefix + "-" + name + ".log"),
      timeout_s_(run.limits.timeout_s),
      worker_(run.executable, worker_environment(config), run.limits, log_, run.tick) {
  ask_side(worker_,
           to_request(TrainSideRequest{spec, config.to_string(), warmup_steps, options.steps,
                                       options.settle_steps}),
           timeout_s_, "training side " + name_, log_, "preparing");
}

double RemoteTrainingSide::block() {
  return from_reply<TrainBlockReply>(ask_side(worker_, to_request(TrainBlockRequest{}), timeout_s_,
                                              "training side " + name_, log_, "running a block"),
                                     "a training block")
      .samples_per_s;
}

}  // namespace torchperf

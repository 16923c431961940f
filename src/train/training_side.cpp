#include "torchperf/train/training_side.h"

#include "torchperf/config/apply.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

using nlohmann::json;

class TrainingSideServer : public SideServer {
 public:
  explicit TrainingSideServer(const json& request)
      : context_(TrainingContext::open(training_spec_from_json(request.at("spec")))),
        session_(context_, Configuration::parse(request.at("configuration").get<std::string>())) {
    options_.steps = request.at("steps").get<std::size_t>();
    options_.settle_steps = request.at("settle_steps").get<std::size_t>();
    // Worker knobs (none in train today) and this side's process state: once, for every block.
    restore_ = session_.enter();
    for (std::size_t i = 0; i < request.at("warmup_steps").get<std::size_t>(); ++i)
      session_.step(false);
  }
  ~TrainingSideServer() override { restore_(); }
  json ready() override { return {{"configuration", session_.configuration().to_string()}}; }
  json block(const json&) override {
    return {{"samples_per_s", block_throughput(session_, options_)}};
  }
  json finish(const json&) override { return json::object(); }

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
           {{"job", "train-side"},
            {"spec", to_json(spec)},
            {"configuration", config.to_string()},
            {"warmup_steps", warmup_steps},
            {"steps", options.steps},
            {"settle_steps", options.settle_steps}},
           timeout_s_, "training side " + name_, log_, "preparing");
}

double RemoteTrainingSide::block() {
  return ask_side(worker_, {{"job", "block"}}, timeout_s_, "training side " + name_, log_,
                  "running a block")
      .at("samples_per_s")
      .get<double>();
}

}  // namespace torchperf

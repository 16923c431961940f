#include "support/known_runs.h"

#include <functional>

namespace torchperf::testing {
namespace {

// A deterministic +-0.5% wobble per configuration, so that intervals have a width.
double wobble(const std::map<std::string, std::string>& knobs) {
  std::string key;
  for (const auto& [k, v] : knobs) key += k + v;
  return 1 + 0.005 * (static_cast<double>(std::hash<std::string>{}(key) % 201) / 100.0 - 1);
}

}  // namespace

SyntheticRun known_run() {
  SyntheticRun run;
  run.model = "builtin:resnet18";
  run.input_source = "3x224x224";
  run.inputs = "Float[1,3,224,224]";
  run.axes = {{"threads", {"2", "1"}},
              {"grad", {"on", "inference"}},
              {"precision", {"fp32", "bf16-autocast"}},
              {"format", {"contiguous", "channels_last"}}};
  run.points = full_factorial(run.axes, [](const auto& k) {
    double t = 100 * wobble(k);
    if (k.at("threads") == "1") t *= 0.7;
    if (k.at("precision") == "bf16-autocast") t *= 1.2;
    if (k.at("precision") == "bf16-autocast" && k.at("format") == "channels_last") t *= 1.3;
    return t;
  });
  for (auto& p : run.points)
    if (p.knobs.at("precision") == "bf16-autocast") p.cosine = 0.9995;
  run.points[1].status = "failed";
  run.points[1].reason = "worker died on signal SIGSEGV";
  run.points[15].status = "guarded";
  run.points[15].cosine = 0.99;
  run.points[15].reason = "accuracy guard: cosine 0.99 < 0.999";
  run.winner = "threads=2,grad=on,precision=bf16-autocast,format=channels_last";
  return run;
}

}  // namespace torchperf::testing

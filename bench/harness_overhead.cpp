// What torchperf's timed iteration costs beyond the model itself: the same prepared workload
// called in a bare loop and through make_timed_run (the code path bench times). Run with
// repetitions in random interleaved order (bench/run.sh): the first benchmark in a fresh process
// runs measurably faster than later ones (heap state), which would otherwise read as overhead.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "torchperf/bench/timed_run.h"
#include "torchperf/config/apply.h"
#include "torchperf/models/builtin_models.h"
#include "torchperf/feed/inputs.h"

namespace {

using namespace torchperf;

// A tiny model makes the harness's share as large as it can be. Both loops get a workload
// prepared the same way, by the same code.
struct Prepared {
  Workload workload;
  ResolvedConfiguration config;
};

std::unique_ptr<Prepared> tiny_workload() {
  auto p = std::make_unique<Prepared>();
  Workload& w = p->workload;
  w.model = open_model("builtin:mlp")->load();
  w.spec = find_builtin("mlp").default_inputs;
  w.inputs = make_inputs(*w.spec, 1, 0);
  p->config = resolve(Configuration::parse("grad=no_grad"), describe_workload(w, false));
  prepare_workload(p->config, w);
  return p;
}

void BM_BareForward(benchmark::State& state) {
  auto p = tiny_workload();
  Workload& w = p->workload;
  torch::NoGradGuard no_grad;
  for (auto _ : state) benchmark::DoNotOptimize(w.model->forward(w.inputs));
}
BENCHMARK(BM_BareForward)->MinTime(1.0);

void BM_TimedRunForward(benchmark::State& state) {
  auto p = tiny_workload();
  const TimedRun run = make_timed_run(p->workload, p->config);
  run.enter();
  for (auto _ : state) run.iterate();
  run.exit();
}
BENCHMARK(BM_TimedRunForward)->MinTime(1.0);

// The harness with nothing to time: one std::function call and the knob scope.
void BM_EmptyIteration(benchmark::State& state) {
  auto p = tiny_workload();
  for (auto _ : state) {
    Undo undo = enter_scope(p->config, p->workload, KnobScope::kCall);
    undo();
  }
}
BENCHMARK(BM_EmptyIteration)->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();

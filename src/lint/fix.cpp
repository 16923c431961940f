#include "torchperf/lint/fix.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "torchperf/bench/bench_runner.h"
#include "torchperf/compat/torch_error.h"
#include "torchperf/config/knob.h"
#include "torchperf/error.h"
#include "torchperf/measure/ratio_estimate.h"
#include "torchperf/models/model.h"
#include "torchperf/models/workload.h"

namespace torchperf {
namespace {

std::string describe(const OutputQuality& q) {
  if (!q.comparable) return "not comparable: " + q.note;
  std::string s = fmt::format("cosine {:.6f}, max abs err {:.3g}", q.cosine, q.max_abs_error);
  if (q.top1_agreement) s += fmt::format(", top-1 agreement {:.1f}%", 100 * *q.top1_agreement);
  return s;
}

std::pair<std::string, std::string> split(const std::string& change) {
  const auto eq = change.find('=');
  return {change.substr(0, eq), change.substr(eq + 1)};
}

}  // namespace

void keep_fastest_value_per_knob(std::vector<RewriteOutcome>& outcomes) {
  std::map<std::string, const RewriteOutcome*> fastest;
  for (const auto& o : outcomes) {
    const RewriteOutcome*& best = fastest[split(o.change).first];
    if (o.kept && (!best || o.speedup > best->speedup)) best = &o;
  }
  for (auto& o : outcomes) {
    const RewriteOutcome* best = fastest[split(o.change).first];
    if (o.kept && best != &o) {
      o.kept = false;
      o.reason = best->change + " measured faster";
    }
  }
}

std::vector<std::pair<std::string, std::string>> applicable_rewrites(const BenchOptions& options) {
  const WorkloadTraits traits = describe(options).traits;
  std::vector<std::pair<std::string, std::string>> out;
  if (find_knob("conv_bias").applies(traits, "fold").applies)
    out.push_back({"conv_bias=fold", "conv-bias-before-bn"});
  // Each multiple is measured: the one the hardware's vectors suggest is not always the fastest.
  const Knob& pad = find_knob("pad");
  for (const auto& value : pad.values(traits))
    if (!options.config.get("pad") && value != pad.baseline(traits) &&
        pad.applies(traits, value).applies)
      out.push_back({"pad=" + value,
                     "size-multiple: hidden Linear sizes padded to multiples of " + value});
  if (!options.config.get("precision") &&
      find_knob("precision").applies(traits, "int8-dynamic").applies)
    out.push_back({"precision=int8-dynamic",
                   "int8 dynamic quantization of the Linear, LSTM and GRU layers (quantized "
                   "tensors: deprecated in PyTorch 2.x, still run by this LibTorch)"});
  return out;
}

std::vector<RewriteOutcome> try_rewrites(const FixOptions& options, TimeSource& time,
                                         const FixProgress& progress) {
  std::vector<RewriteOutcome> outcomes;
  for (const auto& [change, fixes] : applicable_rewrites(options.bench)) {
    if (progress) progress(change);
    RewriteOutcome o;
    o.change = change;
    o.fixes = fixes;
    BenchOptions bench = options.bench;
    const auto [knob, value] = split(change);
    bench.config.set(knob, value);
    bench.vs = options.bench.config;
    try {
      const BenchResult r = run_bench(bench, time);
      const Comparison& c = *r.comparison;
      o.speedup = c.speedup.ratio;
      o.interval = c.speedup.interval;
      o.accuracy = describe(c.a.quality);
      const auto failure = options.guard.check(quality_metrics(c.a.quality));
      o.passes_guard = !failure;
      if (failure)
        o.reason = "fails the accuracy guard (" + options.guard.to_string() + "): " + *failure;
      const Verdict verdict = verdict_of(o.interval);
      if (!failure && verdict == Verdict::kUndetermined)
        o.reason = "too few rounds for an interval";
      else if (!failure && verdict == Verdict::kSlower)
        o.reason = "slower: its interval lies below 1";
      else if (!failure && verdict == Verdict::kIndistinguishable)
        o.reason = "not shown faster: its interval reaches 1";
      o.kept = o.passes_guard && verdict == Verdict::kFaster;
    } catch (const Error& e) {  // the rewrite broke the model: reported, the original untouched
      o.reason = std::string("the rewritten model failed: ") + e.what();
    } catch (const std::exception& e) {
      o.reason = "the rewritten model failed: " + compat::concise_error_message(e.what());
    }
    outcomes.push_back(o);
  }
  keep_fastest_value_per_knob(outcomes);
  return outcomes;
}

void write_rewritten_model(const BenchOptions& options,
                           const std::vector<RewriteOutcome>& outcomes, const std::string& path) {
  Workload w;
  w.model = open_model(options.model)->load();
  auto* script = w.model->as_torchscript();
  if (!script) throw ModelError("'" + options.model + "' is not a TorchScript model");
  // Registry order, as a measurement applies them.
  for (const auto& knob : knob_registry())
    for (const auto& o : outcomes)
      if (o.kept && split(o.change).first == knob.name) knob.prepare(split(o.change).second, w);
  save_torchscript(script->module(), path);
}

}  // namespace torchperf

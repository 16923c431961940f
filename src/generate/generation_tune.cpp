#include "torchperf/generate/generation_tune.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "torchperf/error.h"
#include "torchperf/serve/load_summary.h"
#include "torchperf/sweep/tune_budget.h"
#include "torchperf/sweep/tune_plan.h"
#include "torchperf/text.h"

namespace torchperf {

GenerationSlo GenerationSlo::parse(const std::string& text) {
  GenerationSlo slo;
  if (text.empty() || text == "none") return slo;
  // MLPerf Inference's LLM latency limits (llama3.1-8b's server scenario, and its interactive one).
  if (text == "mlperf-llama3.1-8b") return {2.0, 0.100};
  if (text == "mlperf-interactive") return {0.500, 0.030};
  for (const auto& part : split(text, ',')) {
    const auto eq = part.find('=');
    const std::string name = eq == std::string::npos ? part : trim(part.substr(0, eq));
    if (eq == std::string::npos || (name != "ttft" && name != "tpot"))
      throw UsageError("--slo '" + text +
                       "': expected ttft=DURATION,tpot=DURATION (p99s, e.g. ttft=500ms,tpot=30ms), "
                       "mlperf-llama3.1-8b or mlperf-interactive");
    const double seconds = parse_latency(trim(part.substr(eq + 1)), "--slo " + name);
    (name == "ttft" ? slo.ttft_p99_s : slo.tpot_p99_s) = seconds;
  }
  return slo;
}

std::optional<std::string> GenerationSlo::missed_by(const GenerationFigures& f) const {
  if (ttft_p99_s && f.ttft_s.p99 > *ttft_p99_s)
    return fmt::format("time to first token p99 {:.1f} ms > {:.1f} ms", f.ttft_s.p99 * 1e3,
                       *ttft_p99_s * 1e3);
  if (tpot_p99_s && f.tpot_s.p99 > *tpot_p99_s)
    return fmt::format("time per output token p99 {:.2f} ms > {:.2f} ms", f.tpot_s.p99 * 1e3,
                       *tpot_p99_s * 1e3);
  return std::nullopt;
}

std::string GenerationSlo::to_string() const {
  std::vector<std::string> parts;
  if (ttft_p99_s) parts.push_back(fmt::format("ttft p99 <= {:g} ms", *ttft_p99_s * 1e3));
  if (tpot_p99_s) parts.push_back(fmt::format("tpot p99 <= {:g} ms", *tpot_p99_s * 1e3));
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

namespace {

// A compile's or an export's price before any point has paid one (seconds): what this 2-core
// machine paid for an 8-layer decoder (docs/generation.md); the measured ones replace it.
constexpr double kCompilePrior = 60;
constexpr double kExportPrior = 60;
constexpr double kPointPrior = 20;

// The bits a decode step reads each weight in: the weights' own width, else the precision's.
double weight_bits(const GenerationSettings& s) {
  const auto weights = s.count("weights") ? s.at("weights") : std::string("none");
  if (weights.rfind("int8", 0) == 0) return 8;
  if (weights.rfind("int4", 0) == 0) return 4;
  const auto precision = s.count("precision") ? s.at("precision") : std::string("fp32");
  return precision == "fp32" ? 32 : 16;
}

}  // namespace

double expected_price_s(const GenerationSettings& settings,
                        const std::vector<GenerationPoint>& done) {
  std::vector<double> plain, same_kind;
  const auto kind = [](const GenerationSettings& s) {
    if (s.at("engine") != "pytorch") return s.at("engine");
    return s.at("compile") == "off" ? std::string() : "compile=" + s.at("compile");
  };
  for (const auto& p : done) {
    if (!p.measured) continue;
    if (kind(p.settings).empty()) plain.push_back(p.wall_s);
    if (!kind(settings).empty() && kind(p.settings) == kind(settings))
      same_kind.push_back(p.figures.setup_s());
  }
  double price = plain.empty() ? kPointPrior : median_of(plain);
  if (!kind(settings).empty()) {
    const double prior = settings.at("engine") != "pytorch" ? kExportPrior : kCompilePrior;
    price += same_kind.empty() ? prior : median_of(same_kind);
  }
  return price;
}

double predicted_gain(const GenerationSettings& settings, std::int64_t batch,
                      const std::vector<GenerationPoint>& done, const GenerationSettings& base) {
  const auto rate_of = [&](const GenerationSettings& s) -> std::optional<double> {
    for (const auto& p : done)
      if (p.batch == batch && p.settings == s)
        return p.valid() ? p.figures.decode_tokens_per_s.median : 0.0;
    return std::nullopt;
  };
  const auto differing = [](const GenerationSettings& a, const GenerationSettings& b) {
    std::vector<std::string> out;
    for (const auto& [k, v] : a)
      if (!b.count(k) || b.at(k) != v) out.push_back(k);
    return out;
  };
  const auto base_rate = rate_of(base);
  if (!base_rate || *base_rate <= 0) return 1;
  // Quantised weights the guard refused in this engine, at any batch or precision: the
  // quantisation's error moved the logits, and it moves them here too.
  const auto weights = settings.count("weights") ? settings.at("weights") : std::string("none");
  for (const auto& p : done)
    if (weights != "none" && p.measured && p.guard_failure && p.settings.count("weights") &&
        p.settings.at("weights") == weights && p.settings.at("engine") == settings.at("engine"))
      return 0;
  // What one anchor (a measured valid point) predicts: its rate, times each knob still apart:
  // its change measured from the anchor, else from the baseline; the weights' effect only within
  // the baseline's engine (torchao's int8 is not NNCF's), a precision's or a cache's carries over
  // (the bytes read halve in any engine). Weights with no evidence: decode as memory-bound, its
  // rate following the bytes a step reads (an optimistic guess that gets the value measured).
  const auto from_anchor = [&](const GenerationPoint& anchor) {
    double rate = anchor.figures.decode_tokens_per_s.median;
    for (const auto& knob : differing(settings, anchor.settings)) {
      GenerationSettings step = anchor.settings;
      step[knob] = settings.at(knob);
      if (const auto measured = rate_of(step)) {
        rate *= *measured / anchor.figures.decode_tokens_per_s.median;
        continue;
      }
      GenerationSettings single = base;
      single[knob] = settings.at(knob);
      const auto alone = rate_of(single);
      const bool same_engine = anchor.settings.at("engine") == base.at("engine") &&
                               settings.at("engine") == base.at("engine");
      if (alone && (same_engine || knob != "weights")) {
        rate *= *alone / *base_rate;
      } else if (knob == "weights" && anchor.figures.step_weight_bytes > 0) {
        GenerationSettings before = settings;  // the anchor's weights in settings' precision
        before["weights"] = anchor.settings.count("weights") ? anchor.settings.at("weights") : "none";
        const double kv = anchor.figures.step_kv_bytes, w = anchor.figures.step_weight_bytes;
        rate *= (kv + w) / (kv + w * weight_bits(settings) / weight_bits(before));
      }
    }
    return rate;
  };
  // The nearest anchors (fewest knobs apart), and the most any of them promises.
  std::optional<std::size_t> nearest;
  for (const auto& p : done)
    if (p.batch == batch && p.valid())
      nearest = std::min(nearest.value_or(SIZE_MAX), differing(settings, p.settings).size());
  if (!nearest) return 1;
  double best = 0;
  for (const auto& p : done)
    if (p.batch == batch && p.valid() && differing(settings, p.settings).size() == *nearest)
      best = std::max(best, from_anchor(p));
  return best / *base_rate;
}

std::optional<std::size_t> pick_winner(const std::vector<GenerationPoint>& points,
                                       const GenerationSlo& slo) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    if (!p.valid() || slo.missed_by(p.figures)) continue;
    if (!best || p.figures.decode_tokens_per_s.median >
                     points[*best].figures.decode_tokens_per_s.median)
      best = i;
  }
  return best;
}

namespace {

std::size_t changes_from(const GenerationSettings& s, const GenerationSettings& base) {
  std::size_t n = 0;
  for (const auto& [k, v] : s) n += base.count(k) && base.at(k) != v;
  return n;
}

GenerationSettings changed_settings(const GenerationSettings& s, const GenerationSettings& base) {
  GenerationSettings out;
  for (const auto& [k, v] : s)
    if (!base.count(k) || base.at(k) != v) out[k] = v;
  return out;
}

struct Planned {
  std::int64_t batch;
  GenerationSettings settings;
};

// Per batch: the baseline, then fewer changes before more, runs before compiles and exports.
std::vector<Planned> plan(const GenerationTuneOptions& o, const GenerationSpace& space,
                          const GenerationSettings& base) {
  std::vector<Planned> out;
  for (auto batch : o.batches)
    for (const auto& s : space.points) out.push_back({batch, s});
  const auto heavy = [](const GenerationSettings& s) {
    return s.at("compile") != "off" || s.at("engine") != "pytorch";
  };
  std::stable_sort(out.begin(), out.end(), [&](const Planned& a, const Planned& b) {
    const auto key = [&](const Planned& p) {
      return std::make_tuple(changes_from(p.settings, base), heavy(p.settings), p.batch);
    };
    return key(a) < key(b);
  });
  return out;
}

std::vector<GenerationPoint> read_journal(const std::string& path, const std::string& workload) {
  std::vector<GenerationPoint> points;
  std::ifstream in(path);
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (trim(line).empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      continue;  // the line a kill cut short: that point runs again
    }
    if (number == 1) {
      if (j.value("workload", "") != workload)
        throw ResultsError("'" + path + "' is the journal of another generation tune (" +
                           j.value("workload", "?") + "); give another --out");
      continue;
    }
    try {
      points.push_back(generation_point_from_json(j));
    } catch (const nlohmann::json::exception& e) {
      throw ResultsError("'" + path + "' line " + std::to_string(number) + ": " + e.what());
    }
  }
  return points;
}

std::string workload_key(const GenerationTuneOptions& o) {
  const auto& w = o.workload;
  return fmt::format("{} prompt={} new_tokens={} device={} seed={} calls={}+{}", w.source.text(),
                     w.prompt.text, w.new_tokens, w.device, w.seed, w.warmup_calls, w.timed_calls);
}

}  // namespace

GenerationTuneResult run_generation_tune(const GenerationTuneOptions& options,
                                         const GenerationProgress& progress) {
  GenerationTuneOptions o = options;
  if (o.workload.cache_dir.empty()) o.workload.cache_dir = o.out_dir + "/engine-cache";
  const auto started = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  check_workload(o.workload);
  std::filesystem::create_directories(o.out_dir + "/logs");
  GenerationTuneResult result;
  const auto traits = generation_traits(o.workload.device);
  const auto space = generation_space(traits, o.space);
  for (const auto& why : space.left_out) result.notes.push_back("left out " + why);
  const std::string journal = o.out_dir + "/generation.jsonl";
  const std::string key = workload_key(o);
  auto done = read_journal(journal, key);

  // The reference first: a model that cannot generate, or prompts it cannot hold, are said before
  // any point runs, and leave no journal behind.
  const std::string reference = o.out_dir + "/reference.pt";
  if (progress) progress(0, 0, "the fp32 eager reference");
  const auto said = run_generation_reference(o.workload, reference, o.out_dir + "/logs", o.limits);
  result.model = said.dump();
  if (done.empty()) std::ofstream(journal) << nlohmann::json{{"workload", key}}.dump() << "\n";

  std::set<std::string> measured;
  for (const auto& p : done) measured.insert(p.label());
  const auto base = baseline_settings(traits);
  auto remaining = plan(o, space, base);
  const std::size_t planned = remaining.size();
  while (!remaining.empty()) {
    // The baseline and the one-knob changes in the plan's order; then the combination whose
    // one-knob changes, multiplied, promise the most.
    std::size_t pick = 0;
    if (changes_from(remaining[0].settings, base) > 1) {
      double best = -1;
      for (std::size_t i = 0; i < remaining.size(); ++i) {
        const double gain = predicted_gain(remaining[i].settings, remaining[i].batch, done, base);
        if (gain > best) best = gain, pick = i;
      }
    }
    const Planned next = remaining[pick];
    remaining.erase(remaining.begin() + static_cast<std::ptrdiff_t>(pick));
    GenerationPoint probe;
    probe.settings = next.settings;
    probe.batch = next.batch;
    if (measured.count(probe.label())) continue;
    const double price = expected_price_s(next.settings, done);
    const double left = o.budget_s - elapsed();
    if (o.budget_s > 0 && price > left && !done.empty()) {
      result.notes.push_back(fmt::format("not measured: batch {} {} (its price, about {:.0f} s, "
                                         "passes the {:.0f} s of budget left)",
                                         next.batch, settings_text(changed_settings(next.settings, base)),
                                         price, std::max(0.0, left)));
      continue;
    }
    if (progress) progress(planned - remaining.size() - 1, planned, probe.label());
    const std::string log = fmt::format("{}/logs/point-{:03d}.log", o.out_dir, done.size() + 1);
    auto point = run_generation_point(o.workload, next.settings, next.batch, reference, log,
                                      o.limits, o.guard);
    std::ofstream(journal, std::ios::app) << to_json(point).dump() << "\n";
    measured.insert(point.label());
    done.push_back(std::move(point));
  }
  if (progress) progress(planned, planned, "done");
  result.points = std::move(done);
  for (std::size_t i = 0; i < result.points.size(); ++i)
    if (result.points[i].settings == base && result.points[i].batch == o.batches.front() &&
        result.points[i].measured)
      result.baseline = i;
  result.winner = pick_winner(result.points, o.slo);
  result.wall_s = elapsed();
  if (o.budget_s > 0 && result.wall_s > o.budget_s)
    result.notes.push_back(fmt::format("the run took {:.1f} min, over the {} budget: a point is "
                                       "priced before it starts and not cut short once started",
                                       result.wall_s / 60, budget_words(o.budget_s)));
  return result;
}

}  // namespace torchperf

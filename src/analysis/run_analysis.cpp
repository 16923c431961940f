#include "torchperf/analysis/run_analysis.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "torchperf/analysis/pareto.h"
#include "torchperf/json_fields.h"

namespace torchperf {
namespace {

using json = nlohmann::json;

bool measured(const PointResult& p) {
  return p.status != PointStatus::kFailed && p.metrics.valid && p.score > 0 && std::isfinite(p.score);
}


Design design_of(const RunResults& run, const std::vector<std::size_t>& measured_points) {
  Design d;
  const auto origin = key_knobs(run.origin);
  for (const auto& [knob, values] : run.axes) {
    if (values.size() < 2) continue;
    Factor f{knob, values.front(), {}};
    for (const auto& [k, v] : origin)
      if (k == knob && std::find(values.begin(), values.end(), v) != values.end()) f.reference = v;
    f.levels.push_back(f.reference);
    for (const auto& v : values)
      if (v != f.reference) f.levels.push_back(v);
    d.factors.push_back(f);
  }
  for (std::size_t i : measured_points) {
    Observation o;
    for (const auto& f : d.factors) o.levels.push_back(knob_value(run.points[i].key, f.name));
    const PointResult& p = run.points[i];
    o.score = p.score;
    if (run.objective == "throughput" || run.objective.empty()) {
      o.low = p.metrics.throughput_low;
      o.high = p.metrics.throughput_high;
    } else if (run.objective == "latency-p50" && p.metrics.latency_p50_high_ms > 0) {
      o.low = 1 / p.metrics.latency_p50_high_ms;
      o.high = 1 / p.metrics.latency_p50_low_ms;
    }
    d.observations.push_back(o);
  }
  return d;
}

struct ValueAccuracy {
  std::size_t measured = 0, guarded = 0;
  double worst_cosine = NAN;
};

ValueAccuracy accuracy_of(const RunAnalysis& a, const std::string& knob, const std::string& value) {
  ValueAccuracy acc;
  for (std::size_t i : a.measured) {
    const auto& p = a.run.points[i];
    if (knob_value(p.key, knob) != value) continue;
    ++acc.measured;
    if (p.status == PointStatus::kGuarded) ++acc.guarded;
    if (std::isfinite(p.metrics.cosine) &&
        !(std::isfinite(acc.worst_cosine) && acc.worst_cosine <= p.metrics.cosine))
      acc.worst_cosine = p.metrics.cosine;
  }
  return acc;
}

std::string cosine_note(const ValueAccuracy& acc) {
  if (!std::isfinite(acc.worst_cosine)) return "";
  return fmt::format("; worst cosine {:.5f}", acc.worst_cosine);
}

bool helps(const EffectEstimate& e) { return e.significant() && e.ratio > 1; }
bool hurts(const EffectEstimate& e) { return e.significant() && e.ratio < 1; }

// A's (or B's) effect seen from one side of an interaction.
struct Conditional {
  std::string knob, value, other, other_value, other_reference;
  EffectEstimate at_value, at_reference;
};

std::vector<Conditional> conditionals_of(const std::vector<Interaction>& interactions,
                                         const std::string& knob, const std::string& value) {
  std::vector<Conditional> out;
  for (const auto& i : interactions) {
    if (!i.estimate.significant()) continue;
    if (i.knob_a == knob && i.value_a == value)
      out.push_back({knob, value, i.knob_b, i.value_b, i.reference_b, i.a_at_value_b,
                     i.a_at_reference_b});
    if (i.knob_b == knob && i.value_b == value)
      out.push_back({knob, value, i.knob_a, i.value_a, i.reference_a, i.b_at_value_a,
                     i.b_at_reference_a});
  }
  return out;
}

std::string describe_conditional(const Conditional& c) {
  return fmt::format("{}={} gives {} with {}={} but {} with {}={}", c.knob, c.value,
                     describe_ratio(c.at_value), c.other, c.other_value,
                     describe_ratio(c.at_reference), c.other, c.other_reference);
}

void recommend(RunAnalysis& a) {
  auto& recs = a.recommendations;
  const RunResults& run = a.run;
  // The winner first: the one line most users act on.
  if (a.winner) {
    recs.push_back({"winner", "run " + *a.winner, a.winner_evidence});
  } else {
    std::optional<std::size_t> best;
    for (std::size_t i : a.measured)
      if (run.points[i].status == PointStatus::kOk && (!best || run.points[i].score > run.points[*best].score))
        best = i;
    recs.push_back({"winner", "no confirmed winner",
                    best ? "the best measured point is " + run.points[*best].key +
                               (run.summary ? "" : " (the sweep did not complete)")
                         : "no configuration finished and passed the accuracy guard"});
  }
  for (const auto& knob : a.effects) {
    // The value to recommend is the best one that helps significantly, not merely the largest
    // ratio (which may rest on one pair without an interval).
    const MainEffect* best_helping = nullptr;
    for (const auto& e : knob.effects)
      if (helps(e.estimate)) {
        best_helping = &e;
        break;
      }
    const MainEffect& best = best_helping ? *best_helping : knob.effects.front();
    const bool all_negligible =
        std::all_of(knob.effects.begin(), knob.effects.end(),
                    [](const MainEffect& e) { return e.estimate.negligible(); });
    if (all_negligible) {
      a.inert_knobs.push_back(knob.knob);
      continue;
    }
    const std::string name = knob.knob + "=" + best.value;
    bool said = false;
    if (helps(best.estimate)) {
      said = true;
      const ValueAccuracy acc = accuracy_of(a, knob.knob, best.value);
      const auto conds = conditionals_of(a.interactions, knob.knob, best.value);
      const Conditional* only_with = nullptr;
      for (const auto& c : conds)
        if ((helps(c.at_value) && !helps(c.at_reference)) ||
            (helps(c.at_reference) && !helps(c.at_value))) {
          only_with = &c;
          break;
        }
      if (acc.measured > 0 && acc.guarded == acc.measured) {
        recs.push_back({"guarded", name + " is faster but fails the accuracy guard",
                        fmt::format("{} over {}{}; every one of its {} points was guarded "
                                    "out ({})",
                                    describe_ratio(best.estimate), knob.knob + "=" + best.reference,
                                    cosine_note(acc), acc.measured, run.accuracy)});
      } else if (only_with) {
        const bool with_value = helps(only_with->at_value);
        recs.push_back(
            {"conditional",
             with_value ? fmt::format("use {} only together with {}={}", name, only_with->other,
                                      only_with->other_value)
                        : fmt::format("use {}, but not with {}={}", name, only_with->other,
                                      only_with->other_value),
             describe_conditional(*only_with) + cosine_note(acc)});
      } else {
        recs.push_back({"use", "use " + name,
                        describe_ratio(best.estimate) + " over " + knob.knob + "=" +
                            best.reference + cosine_note(acc)});
      }
    }
    for (const auto& e : knob.effects) {
      if (!hurts(e.estimate)) continue;
      said = true;
      const std::string value = knob.knob + "=" + e.value;
      // An average slowdown can hide a setting where the value does no harm (or helps).
      const auto conds = conditionals_of(a.interactions, knob.knob, e.value);
      const Conditional* except = nullptr;
      for (const auto& c : conds)
        if (hurts(c.at_value) != hurts(c.at_reference)) {
          except = &c;
          break;
        }
      if (except) {
        const bool only_with_value = hurts(except->at_value);
        recs.push_back({"conditional",
                        only_with_value
                            ? fmt::format("avoid {} together with {}={}", value, except->other,
                                          except->other_value)
                            : fmt::format("avoid {}, except with {}={}", value, except->other,
                                          except->other_value),
                        describe_conditional(*except)});
      } else {
        recs.push_back({"avoid", "avoid " + value,
                        describe_ratio(e.estimate) + " against " + knob.knob + "=" + e.reference});
      }
    }
    if (!said) {
      // No average effect stands out, but one may hold on one side of another knob only.
      for (const auto& e : knob.effects) {
        for (const auto& c : conditionals_of(a.interactions, knob.knob, e.value)) {
          const std::string value = knob.knob + "=" + e.value;
          const std::string other = c.other + "=" + c.other_value;
          std::string text;
          if (helps(c.at_value) && !helps(c.at_reference))
            text = "use " + value + " only together with " + other;
          else if (helps(c.at_reference) && !helps(c.at_value))
            text = "use " + value + ", but not with " + other;
          else if (hurts(c.at_value) && !hurts(c.at_reference))
            text = "avoid " + value + " together with " + other;
          else if (hurts(c.at_reference) && !hurts(c.at_value))
            text = "avoid " + value + ", except with " + other;
          if (text.empty()) continue;
          recs.push_back({"conditional", text, describe_conditional(c)});
          said = true;
          break;
        }
        if (said) break;
      }
    }
    if (!said) {
      std::string evidence;
      for (const auto& e : knob.effects)
        evidence += (evidence.empty() ? "" : "; ") + knob.knob + "=" + e.value + " " +
                    describe_ratio(e.estimate);
      const bool any_interval =
          std::any_of(knob.effects.begin(), knob.effects.end(),
                      [](const MainEffect& e) { return e.estimate.has_interval(); });
      recs.push_back({"unclear",
                      any_interval ? "no clear effect of " + knob.knob
                                   : "too little evidence on " + knob.knob +
                                         " (no interval: measure more points or longer)",
                      evidence});
    }
  }
  // Effects that change direction with another knob: an average hides them.
  for (const auto& i : a.interactions) {
    if (!i.estimate.significant()) continue;
    const auto flips = [](const EffectEstimate& x, const EffectEstimate& y) {
      return (helps(x) && hurts(y)) || (hurts(x) && helps(y));
    };
    Conditional c;
    if (flips(i.a_at_value_b, i.a_at_reference_b))
      c = {i.knob_a, i.value_a, i.knob_b, i.value_b, i.reference_b, i.a_at_value_b,
           i.a_at_reference_b};
    else if (flips(i.b_at_value_a, i.b_at_reference_a))
      c = {i.knob_b, i.value_b, i.knob_a, i.value_a, i.reference_a, i.b_at_value_a,
           i.b_at_reference_a};
    else
      continue;
    recs.push_back({"depends",
                    fmt::format("{}={} {} with {}={} but {} with {}={}", c.knob, c.value,
                                helps(c.at_value) ? "helps" : "hurts", c.other, c.other_value,
                                helps(c.at_reference) ? "helps" : "hurts", c.other,
                                c.other_reference),
                    describe_conditional(c)});
  }
  if (!a.inert_knobs.empty()) {
    std::string names;
    for (const auto& k : a.inert_knobs) names += (names.empty() ? "" : ", ") + k;
    recs.push_back({"no-effect", "these knobs did nothing here: " + names,
                    fmt::format("every value's effect and its 95% interval within {:.0f}% of 1",
                                (kNegligibleRatio - 1) * 100)});
  }
}

std::string winner_evidence(const RunResults& run, const std::string& winner) {
  std::string evidence;
  const json& s = *run.summary;
  const auto h2h = [&](const char* key, const char* what) {
    if (!s.contains(key) || !s.at(key).is_object()) return;
    const json& h = s.at(key);
    if (!h.contains("ratio") || !h.at("ratio").is_number()) return;
    if (!string_field(h, "failure").empty()) return;
    const json ci = h.contains("ci") && h.at("ci").is_array() && h.at("ci").size() == 2
                        ? h.at("ci") : json::array({nullptr, nullptr});
    const int rounds = integer_field(h, "rounds");
    evidence += (evidence.empty() ? "" : "; ") +
                (ci.at(0).is_number() && ci.at(1).is_number()
                     ? fmt::format("{:.3f}x ({:.3f}-{:.3f}) over {}, head to head, {} rounds",
                                   h.at("ratio").get<double>(), ci.at(0).get<double>(),
                                   ci.at(1).get<double>(), what, rounds)
                     : fmt::format("{:.3f}x (no interval) over {}, head to head, {} rounds",
                                   h.at("ratio").get<double>(), what, rounds));
  };
  h2h("vs_baseline", "the baseline");
  h2h("vs_careful", "careful (eval + no_grad)");
  for (const auto& p : run.points)
    if (p.key == winner && std::isfinite(p.metrics.cosine))
      evidence += fmt::format("{}cosine {:.5f} against fp32", evidence.empty() ? "" : "; ",
                              p.metrics.cosine);
  const std::string note = string_field(s, "winner_note");
  if (!note.empty()) evidence += (evidence.empty() ? "" : "; ") + note;
  return evidence;
}

}  // namespace

std::string describe_ratio(const EffectEstimate& e, const std::string& unit) {
  if (e.pairs == 0) return "no " + unit + "s";
  const std::string count = fmt::format("{} {}{}", e.pairs, unit, e.pairs == 1 ? "" : "s");
  if (!e.has_interval()) return fmt::format("{:.3f}x ({}, no interval)", e.ratio, count);
  return fmt::format("{:.3f}x ({:.3f}-{:.3f}, {}{})", e.ratio, e.low, e.high, count,
                     e.measurement_interval ? "; interval from the points' own CIs" : "");
}

std::string describe_interaction(const Interaction& i) {
  // Told from the side where one of the two conditional effects is closest to nothing: "X helps
  // 1.3x with Y but 1.0x without" says more than two effects of different sizes.
  const auto nearest_to_one = [](const EffectEstimate& x, const EffectEstimate& y) {
    return std::min(std::abs(std::log(x.ratio)), std::abs(std::log(y.ratio)));
  };
  const bool from_a = nearest_to_one(i.a_at_value_b, i.a_at_reference_b) <=
                      nearest_to_one(i.b_at_value_a, i.b_at_reference_a);
  const Conditional c =
      from_a ? Conditional{i.knob_a, i.value_a, i.knob_b, i.value_b, i.reference_b,
                           i.a_at_value_b, i.a_at_reference_b}
             : Conditional{i.knob_b, i.value_b, i.knob_a, i.value_a, i.reference_a,
                           i.b_at_value_a, i.b_at_reference_a};
  return fmt::format("{}={} gives {:.3f}x with {}={} but {:.3f}x with {}={} (ratio of ratios {})",
                     c.knob, c.value, c.at_value.ratio, c.other, c.other_value,
                     c.at_reference.ratio, c.other, c.other_reference,
                     describe_ratio(i.estimate, "quadruple"));
}

RunAnalysis analyze(RunResults run) {
  RunAnalysis a;
  a.run = std::move(run);
  const RunResults& r = a.run;
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    if (measured(r.points[i])) a.measured.push_back(i);
    if (r.points[i].status == PointStatus::kGuarded) a.guarded.push_back(i);
    if (r.points[i].status == PointStatus::kFailed) a.failed.push_back(i);
  }
  a.design = design_of(r, a.measured);
  a.effects = main_effects(a.design);
  a.interactions = interactions(a.design);

  std::vector<ParetoInput> p99, memory, accuracy;
  for (std::size_t i : a.measured) {
    const PointMetrics& m = r.points[i].metrics;
    p99.push_back({m.latency_p99_ms, m.throughput});
    memory.push_back({static_cast<double>(m.peak_memory_bytes), m.throughput});
    accuracy.push_back({std::isfinite(m.cosine) ? std::max(0.0, 1 - m.cosine) : NAN, m.throughput});
  }
  const auto front = [&](const char* name, const char* x_label,
                         const std::vector<ParetoInput>& in) {
    ParetoFront f{name, x_label, {}};
    for (std::size_t j : pareto_front(in, false, true)) f.keys.push_back(r.points[a.measured[j]].key);
    a.fronts.push_back(f);
  };
  front("throughput-p99", "p99 latency (ms)", p99);
  front("throughput-memory", "peak memory (bytes)", memory);
  front("throughput-accuracy", "1 - cosine against fp32", accuracy);

  if (r.summary && r.summary->contains("winner") && r.summary->at("winner").is_string()) {
    a.winner = r.summary->at("winner").get<std::string>();
    a.winner_evidence = winner_evidence(r, *a.winner);
  }
  recommend(a);
  return a;
}

json to_json(const EffectEstimate& e) {
  return {{"ratio", nullable(e.ratio)},
          {"ci", {nullable(e.low), nullable(e.high)}},
          {"pairs", e.pairs},
          {"measurement_interval", e.measurement_interval},
          {"significant", e.significant()}};
}

json to_json(const RunAnalysis& a) {
  json effects = json::array();
  for (const auto& k : a.effects) {
    json values = json::array();
    for (const auto& e : k.effects)
      values.push_back({{"value", e.value}, {"reference", e.reference}, {"effect", to_json(e.estimate)}});
    effects.push_back({{"knob", k.knob}, {"strength", k.strength}, {"values", values}});
  }
  json inter = json::array();
  for (const auto& i : a.interactions)
    inter.push_back({{"a", i.knob_a + "=" + i.value_a},
                     {"a_reference", i.knob_a + "=" + i.reference_a},
                     {"b", i.knob_b + "=" + i.value_b},
                     {"b_reference", i.knob_b + "=" + i.reference_b},
                     {"interaction", to_json(i.estimate)},
                     {"a_at_b", to_json(i.a_at_value_b)},
                     {"a_at_b_reference", to_json(i.a_at_reference_b)},
                     {"b_at_a", to_json(i.b_at_value_a)},
                     {"b_at_a_reference", to_json(i.b_at_reference_a)},
                     {"words", describe_interaction(i)}});
  json fronts = json::object();
  for (const auto& f : a.fronts) fronts[f.name] = {{"x", f.x_label}, {"keys", f.keys}};
  json recs = json::array();
  for (const auto& r : a.recommendations)
    recs.push_back({{"kind", r.kind}, {"text", r.text}, {"evidence", r.evidence}});
  const auto listed = [&](const std::vector<std::size_t>& indices) {
    json out = json::array();
    for (std::size_t i : indices) {
      const auto& p = a.run.points[i];
      out.push_back({{"key", p.key}, {"reason", p.reason}, {"failure_kind", p.failure_kind}});
    }
    return out;
  };
  return {{"kind", "report"},
          {"schema_version", 1},
          {"journal", a.run.journal},
          {"label", a.run.label},
          {"model", a.run.model},
          {"inputs", a.run.inputs},
          {"objective", a.run.objective},
          {"origin", a.run.origin},
          {"points", a.run.points.size()},
          {"measured", a.measured.size()},
          {"winner", a.winner ? json(*a.winner) : json(nullptr)},
          {"winner_evidence", a.winner_evidence},
          {"main_effects", effects},
          {"interactions", inter},
          {"pareto", fronts},
          {"recommendations", recs},
          {"inert_knobs", a.inert_knobs},
          {"guarded", listed(a.guarded)},
          {"failed", listed(a.failed)},
          {"warnings", a.run.warnings}};
}

}  // namespace torchperf

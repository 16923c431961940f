#include "torchperf/analysis/run_analysis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "torchperf/analysis/pareto.h"
#include "torchperf/config/knob.h"
#include "torchperf/json_fields.h"

#include "torchperf/runtime/runtime.h"

namespace torchperf {
namespace {

using json = nlohmann::json;

bool measured(const PointResult& p) {
  return p.status != PointStatus::kFailed && p.metrics.valid && p.score > 0 && std::isfinite(p.score);
}


bool in_python(const std::string& key) {
  return runtime_of_key(key).worker() == RuntimeWorker::kPython;
}

// With both runtimes swept, a knob whose origin value only C++ takes (graph=aoti) has its
// reference in Python at Python's own baseline (eager), and a knob that only Python has (grad,
// format) is at its reference in C++: so runtime=python is measured against C++ with each at its
// own baseline, and graph=compile against eager, within Python.
struct RuntimeReferences {
  std::map<std::string, std::string> python;  // knob -> Python's reference where it differs
  bool both = false;
};

RuntimeReferences runtime_references(const RunResults& run, const std::vector<Factor>& factors,
                                     const std::vector<std::size_t>& measured_points) {
  RuntimeReferences refs;
  std::set<std::string> runtimes;
  for (std::size_t i : measured_points) runtimes.insert(runtime_of_key(run.points[i].key).family());
  refs.both = runtimes.size() == 2;
  if (!refs.both) return refs;
  WorkloadTraits program;
  program.torchscript_form = false;
  program.program_form = true;
  WorkloadTraits python = program;
  for (const Runtime* r : torchperf::runtimes())  // the first Python runtime that takes a program
    if (r->worker() == RuntimeWorker::kPython && r->accepts(program).applies) {
      python = r->view(program);
      break;
    }
  for (const auto& f : factors) {
    if (f.name == "runtime") continue;
    bool python_takes_reference = false;
    for (std::size_t i : measured_points)
      python_takes_reference |= in_python(run.points[i].key) &&
                                knob_value(run.points[i].key, f.name) == f.reference;
    if (python_takes_reference) continue;
    const std::string own = find_knob(f.name).baseline(python);
    if (own != f.reference) refs.python[f.name] = own;
  }
  return refs;
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
  const RuntimeReferences refs = runtime_references(run, d.factors, measured_points);
  const std::vector<Factor> as_swept = d.factors;
  for (auto& f : d.factors) {
    const auto own = refs.python.find(f.name);
    if (own == refs.python.end()) continue;
    f.reference = fmt::format("{} (C++) / {} (Python)", f.reference, own->second);
    f.levels.front() = f.reference;
    f.levels.erase(std::remove(f.levels.begin() + 1, f.levels.end(), own->second), f.levels.end());
  }
  for (std::size_t i : measured_points) {
    Observation o;
    for (std::size_t k = 0; k < d.factors.size(); ++k) {
      const Factor& f = d.factors[k];
      std::string level = knob_value(run.points[i].key, f.name);
      if (refs.both && f.name != "runtime") {
        const auto own = refs.python.find(f.name);
        const bool python = in_python(run.points[i].key);
        if ((python && own != refs.python.end() && level == own->second) ||
            (!python && (level == "n/a" || level == as_swept[k].reference)))
          level = f.reference;  // each runtime at its own baseline
      }
      o.levels.push_back(level);
    }
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

// Advice to use or avoid a value needs an effect beyond the band the effects table calls
// negligible (kNegligibleRatio): a 2% difference on a GPU is noise given as advice otherwise.
bool helps(const EffectEstimate& e) { return e.significant() && e.ratio > kNegligibleRatio; }
bool hurts(const EffectEstimate& e) { return e.significant() && e.ratio < 1 / kNegligibleRatio; }

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

// The winner first: the one line most users act on.
void recommend_winner(RunAnalysis& a) {
  auto& recs = a.recommendations;
  const RunResults& run = a.run;
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
}

// The best point of each runtime swept, side by side.
void recommend_runtime(RunAnalysis& a) {
  auto& recs = a.recommendations;
  const RunResults& run = a.run;
  if (!a.best_of_runtime.empty()) {
    // Staying in Python with torch.compile or running from C++ is the user's choice to make:
    // both numbers, with what each costs to compile.
    std::string text, evidence;
    for (const auto& [runtime, i] : a.best_of_runtime) {
      const PointResult& p = run.points[i];
      text += fmt::format("{}best in {}: {}", text.empty() ? "" : "; ", runtime, p.key);
      evidence += fmt::format("{}{}: {} samples/s, compile {:.1f} s", evidence.empty() ? "" : "; ",
                              runtime, throughput_with_interval(p.metrics), compile_seconds(p));
    }
    recs.push_back({"runtime", text, evidence + " (from the sweep)"});
  }
}

// torch.compile's graph breaks: each one returns to Python between compiled pieces.
void recommend_graph_breaks(RunAnalysis& a) {
  auto& recs = a.recommendations;
  const RunResults& run = a.run;
  std::int64_t most = 0;
  std::size_t points = 0;
  std::vector<std::string> reasons;
  for (const auto& p : run.points) {
    if (!p.measurement.is_object() || !p.measurement.contains("compile")) continue;
    const json& c = p.measurement.at("compile");
    if (!c.is_object() || !c.contains("graph_breaks") || !c.at("graph_breaks").is_number_integer())
      continue;
    const auto breaks = c.at("graph_breaks").get<std::int64_t>();
    if (breaks <= 0) continue;
    ++points;
    most = std::max(most, breaks);
    if (c.contains("graph_break_reasons") && c.at("graph_break_reasons").is_array())
      for (const auto& reason : c.at("graph_break_reasons"))
        if (reason.is_string() && reasons.size() < 3 &&
            std::find(reasons.begin(), reasons.end(), reason.get<std::string>()) == reasons.end())
          reasons.push_back(reason.get<std::string>());
  }
  if (points > 0) {
    std::string first;
    for (const auto& reason : reasons) first += (first.empty() ? "" : " | ") + reason;
    recs.push_back(
        {"graph-breaks",
         fmt::format("torch.compile broke the model's graph up to {} time(s) ({} point(s)): "
                     "each break runs Python between compiled pieces; remove them to let "
                     "Inductor fuse across",
                     most, points),
         "first reasons: " + first +
             "; torch._dynamo.explain(model)(*inputs) lists every break"});
  }
}

// The knob's best value that helps: use it, with a condition where another knob decides, or
// say it fails the guard.
void recommend_helping(RunAnalysis& a, const KnobEffects& knob, const MainEffect& best,
                       const std::string& name) {
  auto& recs = a.recommendations;
  const RunResults& run = a.run;
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

// Each value that hurts: avoid it, except where another knob's value takes the harm away.
bool recommend_hurting(RunAnalysis& a, const KnobEffects& knob) {
  auto& recs = a.recommendations;
  bool said = false;
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
  return said;
}

// No average effect stands out, but one may hold on one side of another knob only.
bool recommend_one_sided(RunAnalysis& a, const KnobEffects& knob) {
  auto& recs = a.recommendations;
  bool said = false;
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
  return said;
}

// Nothing stood out: said, with each value's ratio, and whether more points could tell.
void recommend_unclear(RunAnalysis& a, const KnobEffects& knob) {
  auto& recs = a.recommendations;
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

// One knob: inert, helping, hurting, one-sided, or unclear.
void recommend_knob(RunAnalysis& a, const KnobEffects& knob) {
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
    return;
  }
  const std::string name = knob.knob + "=" + best.value;
  bool said = helps(best.estimate);
  if (said) recommend_helping(a, knob, best, name);
  said = recommend_hurting(a, knob) || said;
  if (!said) said = recommend_one_sided(a, knob);
  if (!said) recommend_unclear(a, knob);
}

// Effects that change direction with another knob: an average hides them.
void recommend_flips(RunAnalysis& a) {
  auto& recs = a.recommendations;
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
}

// The knobs that did nothing, in one line.
void recommend_inert(RunAnalysis& a) {
  auto& recs = a.recommendations;
  if (!a.inert_knobs.empty()) {
    std::string names;
    for (const auto& k : a.inert_knobs) names += (names.empty() ? "" : ", ") + k;
    recs.push_back({"no-effect", "these knobs did nothing here: " + names,
                    fmt::format("every value's effect and its 95% interval within {:.0f}% of 1",
                                (kNegligibleRatio - 1) * 100)});
  }
}

void recommend(RunAnalysis& a) {
  recommend_winner(a);
  recommend_runtime(a);
  recommend_graph_breaks(a);
  for (const auto& knob : a.effects) recommend_knob(a, knob);
  recommend_flips(a);
  recommend_inert(a);
}

std::string winner_evidence(const RunResults& run, const std::string& winner) {
  std::string evidence;
  const json& s = *run.summary;
  const auto h2h = [&](const char* key, const std::string& what) {
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
  // The careful baseline leads, as in tune's summary.
  h2h("vs_careful", string_field(s, "as_given").empty()
                        ? "careful (eval, no autograd)"
                        : "careful (your model, eval + inference_mode)");
  h2h("vs_as_given", "the model as given");
  h2h("vs_baseline", "the baseline");
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

std::string human_number(double v) {
  if (!std::isfinite(v)) return fmt::format("{}", v);
  if (std::fabs(v) < 1000) return fmt::format("{:.4g}", v);
  // Whole numbers in groups of three: 808,830 reads at a glance, 8.088e+05 does not.
  std::string digits = fmt::format("{:.0f}", std::fabs(v)), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

std::string throughput_with_interval(const PointMetrics& m) {
  if (std::isfinite(m.throughput_low) && std::isfinite(m.throughput_high) && m.throughput_high > 0)
    return human_number(m.throughput) + " (95% CI " + human_number(m.throughput_low) + "-" +
           human_number(m.throughput_high) + ")";
  return human_number(m.throughput) + " (no interval: too few samples)";
}

std::map<std::string, std::size_t> best_of_each_runtime(const std::vector<PointResult>& points) {
  std::map<std::string, std::size_t> best;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (points[i].status != PointStatus::kOk) continue;
    const std::string runtime = runtime_of_key(points[i].key).label();
    const auto it = best.find(runtime);
    if (it == best.end() || points[i].score > points[it->second].score) best[runtime] = i;
  }
  if (best.size() < 2) best.clear();
  return best;
}

double compile_seconds(const PointResult& p) {
  if (!p.measurement.is_object() || !p.measurement.contains("compile") ||
      !p.measurement.at("compile").is_object())
    return 0;  // eager: nothing compiled
  const double s = number_or_nan(p.measurement.at("compile").value("compile_s", json(nullptr)));
  return std::isfinite(s) && s > 0 ? s : 0;
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

  std::vector<ParetoInput> p99, memory, accuracy, compile;
  bool compiled = false;
  for (std::size_t i : a.measured) {
    const PointMetrics& m = r.points[i].metrics;
    compile.push_back({compile_seconds(r.points[i]), m.throughput});
    compiled |= compile.back().x > 0;
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
  // What a faster point costs before its first call: an AOTInductor package or torch.compile.
  if (compiled) front("throughput-compile", "compile time (s)", compile);
  a.best_of_runtime = best_of_each_runtime(r.points);

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
      out.push_back({{"key", p.key}, {"reason", p.reason}, {"failure_kind", p.failure.name()}});
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

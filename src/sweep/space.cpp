#include "torchperf/sweep/space.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "torchperf/config/knob.h"
#include "torchperf/error.h"
#include "torchperf/runtime/runtime.h"

namespace torchperf {
namespace {

// The views of the runtimes a space's runtime axis reaches (every runtime of each family on the
// axis that takes the model); the first is the model's own C++ runtime.
std::vector<WorkloadTraits> runtime_views(const WorkloadTraits& traits,
                                          const std::vector<std::string>& families) {
  std::vector<WorkloadTraits> views = {runtime_for("", "", traits).view(traits)};
  for (const auto& family : families)
    for (const Runtime* r : family_runtimes(family, traits))
      if (r->name() != views.front().runtime) views.push_back(r->view(traits));
  return views;
}

WorkloadTraits viewed_default(const WorkloadTraits& traits) {
  return runtime_for("", "", traits).view(traits);
}

std::vector<SpaceAxis> make_axes(const WorkloadTraits& traits,
                                 const std::map<std::string, std::vector<std::string>>& requested,
                                 std::vector<std::string>& left_out) {
  for (const auto& [name, values] : requested)
    if (!find_knob(name).inference)  // an unknown knob: ConfigError naming the knobs
      throw ConfigError("--space " + name + ": not a knob of tune (it belongs to train)");
  std::vector<SpaceAxis> axes;
  // The runtime axis comes first (registry order): with more than one runtime on it (a program's
  // default: C++ and Python; a built-in's: TorchScript, AOTInductor and Python), the other axes
  // hold the values of every runtime (graph: frozen-opt for TorchScript, aoti for AOTInductor,
  // compile for Python); each point keeps those of its own (build_space).
  std::vector<WorkloadTraits> views = {viewed_default(traits)};
  std::vector<WorkloadTraits> expert_views = views;
  for (const auto& knob : inference_knobs()) {
    SpaceAxis axis{knob.name, {}, knob.baseline(traits), ""};
    const auto asked = requested.find(knob.name);
    if (asked != requested.end()) {
      // The user's values are checked by resolve() below: an inapplicable one is an error there.
      axis.values = asked->second;
    } else {
      if (!knob.swept_by_default(traits)) continue;  // process-level knobs: only when --space names them
      std::map<std::string, std::string> omitted;  // reason -> values
      for (const auto& view : knob.name == "runtime" ? std::vector<WorkloadTraits>{traits} : views)
        for (const auto& v : knob.values(view)) {
          if (std::find(axis.values.begin(), axis.values.end(), v) != axis.values.end()) continue;
          if (const Applicability a = knob.applies(view, v); !a.applies) {
            // A runtime not installed, or without this device, is said once, never an error.
            if (knob.name == "runtime") left_out.push_back("runtime=" + v + ": " + a.reason);
            continue;
          }
          if (const std::string why = knob.left_out_of_sweep(traits, v); !why.empty()) {
            std::string& values = omitted[why];
            if (values.find(v) == std::string::npos) values += (values.empty() ? "" : ",") + v;
            continue;
          }
          axis.values.push_back(v);
        }
      for (const auto& [why, values] : omitted)
        left_out.push_back(knob.name + "=" + values + ": " + why + " (--space " + knob.name +
                           "=... sweeps " +
                           (values.find(',') == std::string::npos ? "it" : "them") + ")");
      if (axis.values.empty()) continue;  // the knob does not apply to this workload
      if (std::find(axis.values.begin(), axis.values.end(), axis.baseline) == axis.values.end() &&
          knob.applies(traits, axis.baseline).applies &&
          knob.left_out_of_sweep(traits, axis.baseline).empty())
        axis.values.insert(axis.values.begin(), axis.baseline);
    }
    // The guides' start is in the runtime they name (torch.compile on a GPU), then in the others.
    for (const auto& view : expert_views)
      for (const auto& v : knob.expert(view))
        if (axis.expert.empty() &&
            std::find(axis.values.begin(), axis.values.end(), v) != axis.values.end())
          axis.expert = v;
    if (knob.name == "runtime") {
      views = runtime_views(traits, axis.values);
      expert_views = views;
      if (!axis.expert.empty()) {
        const std::string favoured = runtime_for(axis.expert, "", traits).name();
        std::stable_partition(expert_views.begin(), expert_views.end(),
                              [&](const WorkloadTraits& v) { return v.runtime == favoured; });
      }
    }
    axes.push_back(axis);
  }
  return axes;
}

// Whether a value applies under the runtime a point runs in.
bool applies_in(const Knob& knob, const WorkloadTraits& traits, const std::string& value) {
  return knob.applies(traits, value).applies;
}

// Short description of why a combination was dropped, from resolve()'s message.
std::string first_clause(const std::string& message) {
  const auto cut = message.find(':');
  return cut == std::string::npos ? message : message.substr(0, cut);
}

// The guides' start of each swept runtime, as a point of the space (resolved to a key it holds).
// The runtime the guides favour (the runtime axis's expert: Python's torch.compile on CUDA) goes
// first; on a CPU the C++ runtimes keep the registry's order.
std::vector<ExpertStart> expert_starts(const Space& space, const WorkloadTraits& traits,
                                       std::vector<WorkloadTraits> swept,
                                       const std::set<std::string>& keys) {
  std::string favoured;
  for (const auto& axis : space.axes)
    if (axis.knob == "runtime" && !axis.expert.empty())
      favoured = runtime_for(axis.expert, "", traits).name();
  std::stable_partition(swept.begin(), swept.end(),
                        [&](const WorkloadTraits& v) { return v.runtime == favoured; });
  std::vector<ExpertStart> starts;
  for (const auto& view : swept) {
    const Runtime& runtime = runtime_named(view.runtime);
    Configuration start, reduced;
    bool differs = false;
    for (const auto& axis : space.axes) {
      const Knob& knob = find_knob(axis.knob);
      const auto has = [&](const std::string& v) {
        return std::find(axis.values.begin(), axis.values.end(), v) != axis.values.end();
      };
      std::string value = has(axis.baseline) ? axis.baseline : axis.values.front();
      if (axis.knob == "runtime") {
        value = runtime.family();
      } else if (axis.knob == "graph") {
        // The runtime's own favourite, else its first graph: the point must run in it. A
        // max-autotune compile (about three times as long) is a later step, not a start.
        std::vector<std::string> graphs = runtime.expert_graphs(view);
        for (const auto& g : runtime.graphs(view)) graphs.push_back(g);
        std::stable_partition(graphs.begin(), graphs.end(), [](const std::string& g) {
          return g.find("max-autotune") == std::string::npos;
        });
        value.clear();
        for (const auto& g : graphs)
          if (value.empty() && has(g)) value = g;
        if (value.empty()) continue;
      } else {
        for (const auto& v : knob.expert(view))
          if (has(v) && applies_in(knob, view, v)) {
            value = v;
            break;
          }
      }
      // A knob this runtime does not take stays unset, as in the space's own points.
      if (axis.knob != "runtime" && axis.knob != "graph" && !applies_in(knob, view, value))
        continue;
      if (axis.knob == "precision") {
        const std::string base = has(axis.baseline) ? axis.baseline : axis.values.front();
        differs = value != base;
        reduced.set(axis.knob, value);
        start.set(axis.knob, base);
        continue;
      }
      start.set(axis.knob, value);
      reduced.set(axis.knob, value);
    }
    // A reduced precision its graph does not take (TorchScript's frozen-opt under autocast on
    // CUDA) starts in the runtime's next favourite graph that takes it.
    const auto graph = reduced.get("graph"), precision = reduced.get("precision");
    if (differs && graph && precision &&
        !runtime.graph_takes(*graph, "precision", *precision, view).applies)
      for (const auto& g : runtime.expert_graphs(view))
        if (runtime.graph_takes(g, "precision", *precision, view).applies) {
          reduced.set("graph", g);
          break;
        }
    // A stream's first start is the careful person's loop (issue 60): each window sorted by
    // length, each batch padded to its longest; then the guides' buckets.
    std::vector<std::pair<Configuration, bool>> variants;
    for (const auto& [config, is_reduced] :
         {std::make_pair(start, false), std::make_pair(reduced, true)}) {
      if (is_reduced && !differs) continue;
      const auto padding = config.get("padding");
      if (padding && *padding != "batch-max" && config.get("batching")) {
        Configuration careful = config;
        careful.set("padding", "batch-max");
        variants.emplace_back(careful, is_reduced);
      }
      variants.emplace_back(config, is_reduced);
    }
    for (const auto& [config, is_reduced] : variants) {
      try {
        const ResolvedConfiguration r = resolve(config, traits);
        if (runtime_of(r, traits).name() != runtime.name() || !keys.count(r.to_string())) continue;
        starts.push_back({runtime.name(), config, is_reduced});
      } catch (const ConfigError&) {
        // A start the space cannot hold (its values contradict): the other starts remain.
      }
    }
  }
  return starts;
}

// The runtimes the points run in: those of the families swept (views also holds the default
// runtime's, which the other axes' values are read against).
std::vector<WorkloadTraits> swept_runtimes(const WorkloadTraits& traits,
                                           const std::vector<WorkloadTraits>& views,
                                           const std::vector<std::string>& families) {
  std::vector<WorkloadTraits> swept;
  for (const auto& view : views)
    for (const auto& family : families)
      for (const Runtime* r : family_runtimes(family, traits))
        if (r->name() == view.runtime &&
            std::none_of(swept.begin(), swept.end(),
                         [&](const WorkloadTraits& s) { return s.runtime == view.runtime; }))
          swept.push_back(view);
  if (swept.empty()) swept = views;
  return swept;
}

// A requested value is checked once, alone, so its error names it rather than a combination;
// one that no runtime swept takes would only be dropped from every point.
void check_requested(const std::vector<SpaceAxis>& axes,
                     const std::map<std::string, std::vector<std::string>>& requested,
                     const WorkloadTraits& traits, const std::vector<WorkloadTraits>& views,
                     const std::vector<WorkloadTraits>& swept,
                     const std::vector<std::string>& families) {
  std::string swept_names;
  for (const auto& family : families) swept_names += (swept_names.empty() ? "" : ",") + family;
  for (const auto& axis : axes)
    if (requested.count(axis.knob))
      for (const auto& v : axis.values) {
        Configuration one;
        one.set(axis.knob, v);  // unknown values: ConfigError
        const Knob& knob = find_knob(axis.knob);
        // A family (runtime=) must take the workload; any other value, some runtime swept.
        const bool family = axis.knob == "runtime";
        bool taken = family && knob.applies(traits, v).applies;
        for (const auto& view : family ? views : swept) taken |= applies_in(knob, view, v);
        if (taken) continue;
        const Applicability a = knob.applies(family ? traits : swept.front(), v);
        std::string elsewhere;
        for (const auto& view : views)
          if (!family && applies_in(knob, view, v)) elsewhere = view.runtime;
        if (elsewhere.empty())
          throw ConfigError("--space " + axis.knob + "=" + v +
                            " does not apply to this workload: " + a.reason);
        throw ConfigError("--space " + axis.knob + "=" + v + " does not apply to runtime=" +
                          swept_names + ", the runtime swept: " + a.reason + " (it applies to " +
                          elsewhere + ": add its family to the runtime axis)");
      }
}

// A value asked for that a point's runtime does not take, gathered by runtime and knob.
struct Refusal {
  const Runtime* runtime;
  std::string knob;
  std::set<std::string> values;
  std::string reason;
};

// What every point of a space is read against: the workload, the runtimes on its axes and the
// values the user asked for; `refused` gathers the points left out for a value asked for.
struct PointRules {
  const WorkloadTraits& traits;
  const std::vector<WorkloadTraits>& views;
  const std::map<std::string, std::vector<std::string>>& requested;
  std::map<std::string, Refusal> refused;  // by runtime and knob
};

// A value only another runtime on the axes takes leaves a point at its own runtime's baseline
// when the sweep chose it. A value the user asked for is never swapped for another: where the
// point's runtime takes the knob but not that value (a batch outside a program's range, a
// TorchScript graph for Python), the point is left out (ConfigError), and noted in `refused`.
Configuration own_runtime(const Configuration& c, PointRules& rules) {
  if (rules.views.size() < 2) return c;
  const Runtime& mine =
      runtime_for(c.get("runtime").value_or(""), c.get("graph").value_or(""), rules.traits);
  const WorkloadTraits own_view = mine.view(rules.traits);
  Configuration own;
  for (const auto& [knob, value] : c.values()) {
    const Knob& k = find_knob(knob);
    bool elsewhere = false;
    for (const auto& view : rules.views)
      elsewhere |= view.runtime != own_view.runtime && applies_in(k, view, value);
    if (knob == "runtime" || applies_in(k, own_view, value) || !elsewhere) {
      own.set(knob, value);
      continue;
    }
    const Applicability taken_here = k.applies(own_view, k.baseline(own_view));
    if (rules.requested.count(knob) && taken_here.applies) {
      Refusal& r = rules.refused[mine.name() + " " + knob];
      r.runtime = &mine;
      r.knob = knob;
      r.values.insert(value);
      r.reason = k.applies(own_view, value).reason;
      throw ConfigError("a value asked for that the point's runtime does not take: " + knob +
                        "=" + value + " for " + mine.label());
    }
  }
  return own;
}

// Every combination of the axes' values, each kept once as it resolves (`seen`: the keys), the
// rest counted by why in `space.dropped`; `space.origin` is each axis's baseline.
void enumerate_points(Space& space, PointRules& rules, std::set<std::string>& seen) {
  for (const auto& axis : space.axes) {
    const bool has_baseline =
        std::find(axis.values.begin(), axis.values.end(), axis.baseline) != axis.values.end();
    space.origin.set(axis.knob, has_baseline ? axis.baseline : axis.values.front());
  }
  try {
    space.origin = own_runtime(space.origin, rules);
  } catch (const ConfigError&) {
    // An origin whose runtime refuses a value asked for: counted from as it is.
  }
  ResolvedConfiguration baseline;
  try {
    baseline = resolve(space.origin, rules.traits);
  } catch (const ConfigError&) {
    baseline = resolve(Configuration{}, rules.traits);
  }
  std::map<std::string, std::size_t> dropped;  // reason -> count
  std::vector<std::size_t> index(space.axes.size(), 0);
  while (true) {
    ++space.combinations;
    Configuration c;
    for (std::size_t i = 0; i < space.axes.size(); ++i)
      c.set(space.axes[i].knob, space.axes[i].values[index[i]]);
    try {
      c = own_runtime(c, rules);
      const ResolvedConfiguration r = resolve(c, rules.traits);
      const std::string key = r.to_string();
      if (seen.insert(key).second) {
        SpacePoint p{key, c, 0};
        for (const auto& k : r.knobs)
          if (k.applicable && k.value != baseline.value(k.name)) ++p.changes;
        space.points.push_back(std::move(p));
      } else {
        ++dropped["the same as another combination once resolved"];
      }
    } catch (const ConfigError& e) {
      ++dropped[first_clause(e.what())];
    }
    std::size_t i = 0;
    for (; i < index.size(); ++i) {
      if (++index[i] < space.axes[i].values.size()) break;
      index[i] = 0;
    }
    if (i == index.size()) break;
  }
  for (const auto& [reason, count] : dropped)
    space.dropped.push_back(std::to_string(count) + " dropped: " + reason);
}

// One note per knob and reason, naming the runtimes a refusal leaves without any value asked
// for; each goes to `space.left_out`, and all of them, joined, are returned.
std::string note_refusals(const PointRules& rules, Space& space) {
  std::map<std::pair<std::string, std::string>, std::pair<std::string, std::set<std::string>>>
      notes;  // (knob, reason) -> (runtimes, values)
  for (const auto& [id, r] : rules.refused) {
    const WorkloadTraits view = r.runtime->view(rules.traits);
    const Knob& knob = find_knob(r.knob);
    const auto& asked = rules.requested.at(r.knob);
    if (std::any_of(asked.begin(), asked.end(),
                    [&](const std::string& v) { return applies_in(knob, view, v); }))
      continue;
    auto& [runtimes, values] = notes[{r.knob, r.reason}];
    runtimes += (runtimes.empty() ? "" : ", ") + r.runtime->label();
    values.insert(r.values.begin(), r.values.end());
  }
  std::string refusals;
  for (const auto& [what, where] : notes) {
    std::string values;
    for (const auto& v : where.second) values += (values.empty() ? "" : ",") + v;
    const std::string note = what.first + "=" + values + " does not apply to " + where.first +
                             " (" + what.second +
                             "): its points are left out, not run at another " + what.first;
    space.left_out.push_back(note);
    refusals += "; " + note;
  }
  return refusals;
}

}  // namespace

Space build_space(const WorkloadTraits& traits,
                  const std::map<std::string, std::vector<std::string>>& requested) {
  Space space;
  space.axes = make_axes(traits, requested, space.left_out);
  std::vector<std::string> families = {runtime_families().front()};
  for (const auto& axis : space.axes)
    if (axis.knob == "runtime") families = axis.values;
  const std::vector<WorkloadTraits> views = runtime_views(traits, families);
  const std::vector<WorkloadTraits> swept = swept_runtimes(traits, views, families);
  check_requested(space.axes, requested, traits, views, swept, families);
  PointRules rules{traits, views, requested, {}};
  std::set<std::string> seen;
  enumerate_points(space, rules, seen);
  const std::string refusals = note_refusals(rules, space);
  if (space.points.empty()) throw UsageError("the space to sweep is empty" + refusals);
  space.expert_starts = expert_starts(space, traits, swept, seen);
  return space;
}

std::vector<std::size_t> expert_start_order(const Space& space, const WorkloadTraits& traits,
                                            const std::vector<std::string>& cpu_isa) {
  // Reduced precision is a start where the device computes in it: half on CUDA; bf16 on a CPU
  // with bf16 instructions (elsewhere it is emulated, slower than fp32, and only the sweep tries
  // it). On CUDA it is the guides' start itself, so it goes first.
  bool reduced = traits.cuda;
  if (!reduced)
    for (const auto& isa : cpu_isa)
      reduced = reduced || isa == "avx512_bf16" || isa == "amx_bf16";
  std::vector<std::size_t> plain, lowered;
  for (const auto& start : space.expert_starts) {
    // int8 (PT2E, ONNX Runtime, OpenVINO) runs int8 kernels on any CPU it applies to (VNNI or
    // AVX2): not bf16's rule.
    const bool int8 = start.config.get("precision").value_or("").rfind("int8-", 0) == 0;
    if (start.reduced_precision && !reduced && !int8) continue;
    std::string key;
    try {
      key = resolve(start.config, traits).to_string();
    } catch (const ConfigError&) {
      continue;
    }
    const auto it = std::find_if(space.points.begin(), space.points.end(),
                                 [&](const SpacePoint& p) { return p.key == key; });
    if (it == space.points.end()) continue;
    (start.reduced_precision && !int8 ? lowered : plain)
        .push_back(static_cast<std::size_t>(it - space.points.begin()));
  }
  std::vector<std::size_t> order = traits.cuda ? lowered : plain;
  const auto& rest = traits.cuda ? plain : lowered;
  order.insert(order.end(), rest.begin(), rest.end());
  return order;
}

Configuration baseline_at(const std::string& batch) {
  Configuration c;
  if (!batch.empty() && batch != "n/a") c.set("batch", batch);
  return c;
}

Configuration careful_at(const WorkloadTraits& traits, const std::string& batch) {
  Configuration c = baseline_at(batch);
  if (traits.can_train_mode) c.set("mode", "eval");
  // A torch.export program has no autograd to turn off: its careful setting is its baseline.
  if (!traits.exported_program) c.set("grad", "no_grad");
  // A careful person feeds a stream of lengths as issue 60's loop does: each window sorted by
  // length, each batch padded to its longest (the padding knob's baseline), not in arrival order.
  const Knob& batching = find_knob("batching");
  if (batching.applies(traits, "").applies && !batching.expert(traits).empty())
    c.set("batching", batching.expert(traits).front());
  return c;
}

Configuration careful_at(const WorkloadTraits& traits, const std::string& batch,
                         const std::string& as_given) {
  if (as_given.empty()) return careful_at(traits, batch);
  Configuration c = Configuration::parse(as_given);
  if (!batch.empty() && batch != "n/a" && !c.get("batch")) c.set("batch", batch);
  if (traits.can_train_mode) c.set("mode", "eval");
  c.set("grad", "inference");
  return c;
}

std::vector<std::size_t> informative_order(const Space& space, std::uint64_t seed) {
  std::vector<std::size_t> baseline, singles, rest;
  for (std::size_t i = 0; i < space.points.size(); ++i) {
    const int changes = space.points[i].changes;
    (changes == 0 ? baseline : changes == 1 ? singles : rest).push_back(i);
  }
  std::mt19937_64 rng(seed);
  std::shuffle(singles.begin(), singles.end(), rng);
  std::shuffle(rest.begin(), rest.end(), rng);
  std::vector<std::size_t> order = baseline;
  order.insert(order.end(), singles.begin(), singles.end());
  order.insert(order.end(), rest.begin(), rest.end());
  return order;
}

}  // namespace torchperf

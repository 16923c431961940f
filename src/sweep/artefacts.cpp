#include "torchperf/sweep/artefacts.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "torchperf/config/configuration.h"
#include "torchperf/config/apply.h"
#include "torchperf/error.h"
#include "torchperf/models/aoti_package.h"
#include "torchperf/models/model.h"

namespace torchperf {

namespace fs = std::filesystem;

namespace {

// What a compile costs before any has been seen for this model, on a CPU of a few cores: an
// AOTInductor package of a ResNet-18 took 20-136 s here, torch.compile's first call 15-60 s.
// max-autotune benchmarks kernel choices: about three times as long.
constexpr double kPackageGuessS = 60;
constexpr double kCompileGuessS = 30;
constexpr double kAutotuneFactor = 3;

}  // namespace

Artefacts::Artefacts(const Space& space, const WorkloadTraits& traits, const BenchOptions& workload,
                     std::int64_t memory_cap_bytes, ArtefactEvents events)
    : space_(space),
      traits_(traits),
      workload_(workload),
      memory_cap_bytes_(memory_cap_bytes),
      events_(std::move(events)) {}

std::string Artefacts::model_file() {
  if (traits_.program_form) {
    if (program_.empty()) program_ = open_model(workload_.model)->program_path();
    return program_;
  }
  std::error_code ec;
  return fs::is_regular_file(workload_.model, ec) ? workload_.model : std::string();
}

void Artefacts::plan() {
  needs_.assign(space_.points.size(), {});
  bool compiles = false;
  for (std::size_t i = 0; i < space_.points.size(); ++i) {
    const SpacePoint& p = space_.points[i];
    index_of_key_[p.key] = i;
    const ResolvedConfiguration c = resolve(p.config, traits_);
    Need& need = needs_[i];
    need.runtime = &runtime_of(c, traits_);
    need.artefact = need.runtime->artefact([&](const std::string& knob) { return c.value(knob); },
                                           need.runtime->view(traits_));
    if (need.artefact.kind == ArtefactKind::kNone) continue;
    compiles = true;
    if (need.artefact.kind != ArtefactKind::kPackage) continue;
    // A capped ATen ISA (the aten_isa knob's variable) has packages of its own.
    const auto environment = worker_environment(p.config);
    if (const auto cap = environment.find("ATEN_CPU_CAPABILITY"); cap != environment.end())
      need.artefact.package.aten_capability = cap->second;
    need.artefact.name = need.artefact.package.to_string();
    packages_.emplace(need.artefact.name, Package{need.artefact.package, need.runtime->name()});
  }
  if (!compiles) return;
  try {
    if (const std::string file = model_file(); !file.empty())
      costs_ = CompileCosts(compile_costs_path(file));
  } catch (const ModelError&) {
    if (!packages_.empty()) throw;  // the program itself is unreadable: no point can run
  }
  for (const auto& [name, package] : packages_) {
    const std::string path = cached_aoti_package(model_file(), package.options);
    if (path.empty()) continue;
    ready_.insert(name);
    CompiledPackageRecord record;
    record.options = name;
    record.path = path;
    record.cache_hit = true;
    if (events_.kept) events_.kept(record);
  }
}

bool Artefacts::needs_package(const Configuration& config, const WorkloadTraits& traits) {
  try {
    const ResolvedConfiguration c = resolve(config, traits);
    const Runtime& runtime = runtime_of(c, traits);
    return runtime.artefact([&](const std::string& knob) { return c.value(knob); },
                            runtime.view(traits))
               .kind == ArtefactKind::kPackage;
  } catch (const ConfigError&) {
    return false;
  }
}

bool Artefacts::in_python(std::size_t point) const {
  return needs_.at(point).runtime->worker() == RuntimeWorker::kPython;
}

bool Artefacts::pending(std::size_t point) const {
  const Need& need = needs_.at(point);
  return need.artefact.kind == ArtefactKind::kPackage && !ready_.count(need.artefact.name) &&
         !failures_.count(need.artefact.name);
}

double Artefacts::compile_estimate_s(std::size_t point, bool brief) const {
  const Need& need = needs_.at(point);
  switch (need.artefact.kind) {
    case ArtefactKind::kNone:
      return 0;
    case ArtefactKind::kPackage:
      return package_estimate_s(need.artefact.name);
    case ArtefactKind::kWorkerCompile:
      return worker_compile_estimate_s(point, brief);
  }
  return 0;
}

// From this package's history, else the longest package compiled so far, scaled the way
// max-autotune scales it.
double Artefacts::package_estimate_s(const std::string& name) const {
  if (ready_.count(name) || failures_.count(name)) return 0;
  const Package& package = packages_.at(name);
  if (const auto seen = costs_.seen({package.runtime, name})) return *seen;
  std::optional<double> plain, tuned;
  for (const auto& [other, candidate] : packages_)
    if (const auto s = costs_.seen({candidate.runtime, other})) {
      auto& longest = candidate.options.max_autotune ? tuned : plain;
      longest = std::max(*s, longest.value_or(0));
    }
  const bool autotune = package.options.max_autotune;
  if (autotune && tuned) return *tuned;
  if (!autotune && plain) return *plain;
  if (plain) return *plain * kAutotuneFactor;
  if (tuned) return *tuned / kAutotuneFactor;
  return kPackageGuessS * (autotune ? kAutotuneFactor : 1);
}

// The knobs a compiled callable does not depend on left out of a point's key: points that differ
// only in how a stream is batched and padded share one graph (a dynamic one, or the first call's
// shape; the stream's other shapes are warmed, not priced here).
std::string Artefacts::graph_of(std::size_t point) const {
  std::string graph;
  for (const auto& [knob, value] : space_.points[point].config.values()) {
    if (knob == "padding" || knob == "batching") continue;
    graph += (graph.empty() ? "" : ",") + knob + "=" + value;
  }
  return graph;
}

// From this graph's history, else any point of the same mode, else the plain mode's scaled. A
// point whose graph this tune compiled already, brief or full, runs in the Python worker of its
// process state that keeps it (the supervisor's pool): pricing a finalist's compile again held
// back ~25 s per finalist for the finals and cut bench 23's screen at 2.4 of its 5 minutes.
double Artefacts::worker_compile_estimate_s(std::size_t point, bool) const {
  const Need& need = needs_.at(point);
  const std::string runtime = need.runtime->name();
  const double factor = need.artefact.autotunes ? kAutotuneFactor : 1;
  const std::string graph = graph_of(point);
  if (compiled_here_.count(graph)) return 0;
  if (const auto seen = costs_.seen({runtime, need.artefact.name, graph})) return *seen;
  if (const auto same = costs_.longest(runtime, need.artefact.name)) return *same;
  if (const auto plain = costs_.longest(runtime, need.artefact.plain)) return *plain * factor;
  return kCompileGuessS * factor;
}

void Artefacts::record_worker_compile(std::size_t point, double seconds) {
  const Need& need = needs_.at(point);
  if (need.artefact.kind != ArtefactKind::kWorkerCompile) return;
  costs_.record({need.runtime->name(), need.artefact.name, graph_of(point)}, seconds);
  compiled_here_.insert(graph_of(point));
}

std::optional<std::string> Artefacts::ensure(std::size_t point) {
  const Need& need = needs_.at(point);
  if (need.artefact.kind != ArtefactKind::kPackage) return std::nullopt;
  return ensure_package(need.artefact.name);
}

std::optional<std::string> Artefacts::ensure_package(const std::string& name) {
  if (ready_.count(name)) return std::nullopt;
  if (const auto failed = failures_.find(name); failed != failures_.end()) return failed->second;
  if (events_.compiling) events_.compiling("compiling " + name);
  CommandLimits limits = within(workload_.compile_timeout_s, memory_cap_bytes_);
  limits.keep_going = [this](double) { return !events_.keep_going || events_.keep_going(); };
  CompiledPackageRecord record;
  record.options = name;
  try {
    const Package& wanted = packages_.at(name);
    const CompiledPackage package = ensure_aoti_package(model_file(), wanted.options, limits);
    record.path = package.path;
    record.compile_s = package.compile_s;
    record.cache_hit = package.cache_hit;
    if (!package.cache_hit) costs_.record({wanted.runtime, name}, package.compile_s);
    ready_.insert(name);
  } catch (const Interrupted&) {
    throw Interrupted("interrupted while compiling the AOTInductor package " + name);
  } catch (const ModelError&) {
    throw;  // the program itself is unreadable: no point can run
  } catch (const Error& e) {
    record.failure = e.what();
    failures_[name] = record.failure;
  }
  if (events_.kept) events_.kept(record);
  if (record.failure.empty()) return std::nullopt;
  // Every package failed and every point needs one: nothing of this space can run.
  const bool every_point_packaged = std::all_of(needs_.begin(), needs_.end(), [](const Need& n) {
    return n.artefact.kind == ArtefactKind::kPackage;
  });
  if (failures_.size() == packages_.size() && every_point_packaged) throw CompileError(record.failure);
  return record.failure;
}

std::optional<std::size_t> Artefacts::index_of(const Configuration& config) const {
  try {
    const auto it = index_of_key_.find(resolve(config, traits_).to_string());
    if (it != index_of_key_.end()) return it->second;
  } catch (const ConfigError&) {
    // Not a configuration of this space: the comparison says what is wrong with it.
  }
  return std::nullopt;
}

bool Artefacts::side_ready(const Configuration& config, double left_s, std::string& why) {
  const auto point = index_of(config);
  if (!point || !pending(*point)) {
    if (point)
      if (const auto failed = failures_.find(needs_[*point].artefact.name); failed != failures_.end()) {
        why = failed->second;
        return false;
      }
    return true;
  }
  const std::string& name = needs_[*point].artefact.name;
  const double estimate = package_estimate_s(name);
  if (estimate > left_s) {
    why = fmt::format("its AOTInductor package ({}) is not compiled: about {:.0f} s, and {:.0f} s "
                      "of the budget is left",
                      name, estimate, std::max(0.0, left_s));
    return false;
  }
  if (const auto failed = ensure_package(name)) {
    why = *failed;
    return false;
  }
  return true;
}

std::string Artefacts::plan_text() const {
  std::size_t to_compile = 0, known = 0;
  double to_compile_s = 0;
  for (const auto& [name, package] : packages_) {
    known += costs_.remembered(package.runtime) + costs_.count(package.runtime);
    if (ready_.count(name)) continue;
    ++to_compile;
    to_compile_s += package_estimate_s(name);
  }
  std::string text;
  if (!packages_.empty()) {
    std::size_t sharing = 0;
    for (const auto& need : needs_) sharing += need.artefact.kind == ArtefactKind::kPackage;
    // A package depends on the knobs it compiles in (precision, threads where it bakes them),
    // not on batching, padding under a dynamic length or the allocator: points that differ only
    // in those share one compile, priced once.
    text = fmt::format("AOTInductor packages: {} of {} in the cache (no compile), shared by {} "
                       "point(s) that differ only in knobs a package does not depend on",
                       ready_.size(), packages_.size(), sharing);
    if (to_compile > 0)
      text += fmt::format(", {} to compile when a point needs one (about {:.0f} s in all, {})",
                          to_compile, to_compile_s,
                          known > 0 ? "from earlier compiles of this model"
                              : "guessed: none compiled before");
  }
  std::size_t in_worker = 0;
  std::size_t remembered = 0;
  std::set<std::string> runtimes, graphs;
  for (std::size_t i = 0; i < needs_.size(); ++i)
    if (needs_[i].artefact.kind == ArtefactKind::kWorkerCompile && compile_estimate_s(i, false) > 0) {
      ++in_worker;
      runtimes.insert(needs_[i].runtime->name());
      graphs.insert(needs_[i].runtime->name() + ":" + graph_of(i));
    }
  for (const auto& r : runtimes) remembered += costs_.remembered(r);
  if (in_worker > 0) {
    // The Python worker of a process state keeps the graphs it compiled: the points of one graph,
    // brief or full, pay one compile there.
    text += (text.empty() ? "" : "; ") +
            fmt::format("torch.compile: {} point(s) over {} graph(s) compile in their worker",
                        in_worker, graphs.size());
    text += remembered > 0 ? fmt::format(", {} compiled by earlier tunes (Inductor's cache holds "
                                         "their kernels; their cost is known)",
                                         remembered)
                           : std::string(", none compiled before (cost guessed)");
  }
  return text;
}

}  // namespace torchperf

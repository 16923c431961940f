// What the points of a tune need prepared before they are timed, as each point's runtime says
// (Runtime::artefact): an AOTInductor package is compiled here, in this process, the first time a
// point needs it (a budget of minutes is not spent on packages whose points the search never
// reaches); torch.compile's graph is compiled inside the point's own worker. Every compile is
// priced before it is paid, from the compile history of this model (CompileCosts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "torchperf/bench/bench_options.h"
#include "torchperf/models/workload_traits.h"
#include "torchperf/runtime/runtime.h"
#include "torchperf/sweep/compile_costs.h"
#include "torchperf/sweep/space.h"
#include "torchperf/sweep/tune_budget.h"
#include "torchperf/sweep/tune_runner.h"

namespace torchperf {

struct ArtefactEvents {
  std::function<void(const std::string& what)> compiling;   // a compile starts here
  std::function<void(const CompiledPackageRecord&)> kept;   // found in the cache, compiled, failed
  std::function<bool()> keep_going;                         // false: stop (Ctrl-C)
};

class Artefacts final : public PointPrices {
 public:
  // space and traits outlive this. memory_cap_bytes bounds a compile here (0: none).
  Artefacts(const Space& space, const WorkloadTraits& traits, const BenchOptions& workload,
            std::int64_t memory_cap_bytes, ArtefactEvents events);

  // Each point's artefact; the compile history read; the packages the cache already holds kept.
  void plan();
  // Whether a configuration's runtime needs a package compiled before it runs.
  static bool needs_package(const Configuration& config, const WorkloadTraits& traits);

  bool in_python(std::size_t point) const override;
  double compile_estimate_s(std::size_t point, bool brief) const override;
  // Its package is still to compile (a compile here would disturb a point timed beside it).
  bool pending(std::size_t point) const;
  // The point's package compiled if it is not yet: nullopt when it is ready (or none is needed),
  // else why it failed. Throws CompileError when every package failed and every point needs one.
  std::optional<std::string> ensure(std::size_t point);
  // A comparison side (any configuration of the space's knobs): true when its package is there, or
  // compiled now when left_s pays for it; `why` says otherwise.
  bool side_ready(const Configuration& config, double left_s, std::string& why);
  // A compile the point's own worker paid (torch.compile), for the next point and the next tune.
  void record_worker_compile(std::size_t point, double seconds);
  // What the plan says of compiles: what the cache already holds and what is still to pay.
  std::string plan_text() const;

 private:
  struct Need {
    const Runtime* runtime = nullptr;
    Artefact artefact;
  };
  std::optional<std::string> ensure_package(const std::string& name);
  double package_estimate_s(const std::string& name) const;
  double worker_compile_estimate_s(std::size_t point, bool brief) const;
  std::string graph_of(std::size_t point) const;
  std::string model_file();
  std::optional<std::size_t> index_of(const Configuration& config) const;

  const Space& space_;
  const WorkloadTraits& traits_;
  BenchOptions workload_;
  std::int64_t memory_cap_bytes_;
  ArtefactEvents events_;
  std::vector<Need> needs_;                              // by point index
  std::set<std::string> compiled_here_;  // graphs (graph_of) a worker of this tune compiled
  std::map<std::string, std::size_t> index_of_key_;
  struct Package {
    AotiOptions options;  // what to compile
    std::string runtime;  // whose package it is (its compile history's key)
  };
  std::map<std::string, Package> packages_;              // by name
  std::set<std::string> ready_;                          // compiled, or found in the cache
  std::map<std::string, std::string> failures_;          // package name -> why
  std::string program_;                                  // the program packages compile
  CompileCosts costs_;
};

}  // namespace torchperf

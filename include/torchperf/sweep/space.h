// The cube of configurations tune sweeps: every applicable knob's values (or the user's), their
// cartesian product resolved against the workload, contradictions dropped and duplicates merged,
// and the order points run in (most informative first, then seeded random).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "torchperf/config/configuration.h"
#include "torchperf/models/workload_traits.h"

namespace torchperf {

struct SpaceAxis {
  std::string knob;
  std::vector<std::string> values;
  std::string baseline;
  std::string expert;  // the first of the knob's expert values on this axis; "" for none
};

struct SpacePoint {
  std::string key;  // the resolved configuration string: the point's identity in the journal
  Configuration config;
  int changes = 0;  // knobs that differ from the space's origin (0 = the origin itself)
};

// The guides' start in one runtime: each knob at the first expert value that runtime takes (else
// its baseline). The reduced-precision variant is a second start: it pays only where the device
// computes in that precision, which the supervisor knows and the space does not.
struct ExpertStart {
  std::string runtime;  // Runtime::name()
  Configuration config;
  bool reduced_precision = false;
};

struct Space {
  std::vector<SpaceAxis> axes;  // registry order; a knob with one value is still an axis
  std::vector<SpacePoint> points;
  // Where single-knob changes are counted from: each knob at its baseline where the space holds
  // it, else at the first value asked for (a space pinned to batch=8 starts from batch=8).
  Configuration origin;
  std::size_t combinations = 0;      // the raw product, before contradictions and duplicates
  std::vector<std::string> dropped;  // e.g. "72 with mode=train and graph=frozen: …"
  // Values a default sweep left out, and why (Knob::left_out_of_sweep): "threads=1,2,4,8: on a
  // CUDA device the GPU does the work: … (--space threads=… sweeps them)".
  std::vector<std::string> left_out;
  // Per runtime swept, the guides' favourite runtime first: its start at the baseline precision,
  // then at the expert precision where that differs.
  std::vector<ExpertStart> expert_starts;
};

// The guides' starts as indices into space.points, in the order a tune measures them. Reduced
// precision is a start where the device computes in it (half on CUDA, bf16 on a CPU whose ISA,
// cpu_isa, has bf16 instructions), and on CUDA it goes first.
std::vector<std::size_t> expert_start_order(const Space& space, const WorkloadTraits& traits,
                                            const std::vector<std::string>& cpu_isa);

// Throws ConfigError for an unknown knob, a value it does not take, or one forced where it does
// not apply; UsageError for an empty space.
Space build_space(const WorkloadTraits& traits,
                  const std::map<std::string, std::vector<std::string>>& requested);

// The baseline (every knob at its baseline value) and careful (eval + no_grad; a stream's windows
// sorted by length, each batch padded to its longest) configurations at a given batch ("" keeps
// the baseline batch).
Configuration baseline_at(const std::string& batch);
Configuration careful_at(const WorkloadTraits& traits, const std::string& batch);
// With the user's code given (--as-given, as the Python API passes it), careful is that code as a
// careful person runs it: eval() and inference_mode, everything else as given.
Configuration careful_at(const WorkloadTraits& traits, const std::string& batch,
                         const std::string& as_given);

// Indices into space.points: the baseline, then every single-knob change (shuffled), then the
// rest (shuffled), all with this seed: under a budget the main effects are measured first.
std::vector<std::size_t> informative_order(const Space& space, std::uint64_t seed);

}  // namespace torchperf

// Applies a resolved configuration to a workload: the one-time transforms, then the scoped state
// entered around calls or blocks and undone in reverse order.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "torchperf/config/configuration.h"
#include "torchperf/config/knob.h"
#include "torchperf/models/workload.h"

namespace torchperf {

// Runs every applicable knob's prepare() in registry order.
void prepare_workload(const ResolvedConfiguration& config, Workload& workload);

// The stream's policy a configuration sets (feed/shape_stream.h): its batch, padding and batching
// knobs where they apply, the rest as in `given` (the recipe's design batch, batch-max, arrival).
// Read once per configuration, by what builds the stream (bench) and what serves it (serve).
StreamPolicy stream_policy_of(const ResolvedConfiguration& config, StreamPolicy given = {});

// Enters every applicable knob of one scope; the returned Undo restores the previous state.
Undo enter_scope(const ResolvedConfiguration& config, const Workload& workload, KnobScope scope);

// The process and worker knobs on which two configurations differ ("threads=1 vs 2"), from what
// each names (an unnamed knob is its baseline): two such sides cannot share one process.
std::vector<std::string> process_state_differences(const Configuration& a, const Configuration& b);
// The worker knobs a configuration names with a value other than the baseline's: it needs a
// fresh process started with their environment.
std::vector<std::string> worker_knobs_named(const Configuration& config);
// The environment a fresh worker gets for a configuration's worker knobs.
std::map<std::string, std::string> worker_environment(const Configuration& config);
// Inside a process: applies and checks every applicable worker knob (Knob::confirm), in registry
// order; returns what each showed. Throws ConfigError when one did not take.
std::map<std::string, std::string> confirm_worker_knobs(const ResolvedConfiguration& config);

}  // namespace torchperf

// The JSON form of bench results: versioned (schema_version), with a context block describing the
// environment. The schema is documented in docs/json-schema.md.
#pragma once

#include <nlohmann/json.hpp>

#include "torchperf/bench/measurement.h"

namespace torchperf {

inline constexpr int kSchemaVersion = 1;

nlohmann::json to_json(const Environment& env);
nlohmann::json to_json(const ResolvedConfiguration& config);
nlohmann::json to_json(const Measurement& m);
nlohmann::json to_json(const Comparison& c);
// {"schema_version", "kind": "measurement"|"comparison", "context", "measurement"|"comparison",
// "valid"}
nlohmann::json to_json(const BenchResult& result);

// Readers of the forms above, for records that crossed a process boundary (a worker's side of a
// comparison); they throw nlohmann::json's exceptions on another shape.
Measurement measurement_from_json(const nlohmann::json& j);
Environment environment_from_json(const nlohmann::json& j);
ResolvedConfiguration resolved_configuration_from_json(const nlohmann::json& j);
// The samples of one side, as the supervisor of a two-process comparison sends them to the
// worker that finishes the measurement.
nlohmann::json to_json(const SampleSet& samples);
SampleSet sample_set_from_json(const nlohmann::json& j, double confidence);

}  // namespace torchperf

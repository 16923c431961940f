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

}  // namespace torchperf

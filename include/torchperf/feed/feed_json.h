// The typed form in which the Python side receives what a model is fed (issue 62): the spec's
// entries and each named dimension's range, parsed once here, so that no Python file parses the
// spec grammar again. The core passes it to its Python steps (--feed); `torchperf __feed` prints it.
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "torchperf/feed/input_spec.h"
#include "torchperf/feed/length_distribution.h"

namespace torchperf {

// {"inputs": [{"argument": NAME|null, "dtype": "int64", "shape": [SIZE or "NAME", ...],
//  "range": [LOW, HIGH]|null}, ...], "dims": {"NAME": [MIN, MAX], ...}}: shapes without the batch.
nlohmann::json feed_json(const InputSpec& spec, const std::vector<NamedDim>& dims);
// Each field of that form and what it holds: `torchperf __protocol` prints it, and the Python
// side's tests check that python/torchperf/feed.py reads the same fields.
nlohmann::json feed_schema();

}  // namespace torchperf

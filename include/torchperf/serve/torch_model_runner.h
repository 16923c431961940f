// The model instances a server runs: the model opened and prepared as bench prepares it under the
// configuration (precision, format, graph, threads …), fed batches built from requests' raw
// bytes, its outputs split back per request. The header is torch-free; LibTorch stays inside.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "torchperf/bench/bench_options.h"
#include "torchperf/feed/input_spec.h"
#include "torchperf/serve/model_runner.h"

namespace torchperf {

// `count` independent copies of the model, each prepared under options.config and checked with one
// call at the configuration's batch. Each instance enters the configuration's process-scope knobs
// on its own thread: with OpenMP, the intra-op thread count (threads) is per calling thread, so
// every instance gets `threads` threads of its own. Throws as bench does (ModelError,
// WorkloadError for inputs the model rejects, RuntimeFailure for a configuration that fails).
std::vector<std::unique_ptr<ModelRunner>> load_model_instances(const BenchOptions& options,
                                                               std::size_t count);

// A start's artefact in words (ModelSignature::start): from the cache (warm) or compiled now (cold).
std::string describe_start(bool cache_hit, double compile_s, const std::string& rebuilt_because);

// The wire form of an input spec (for a server without a model): names input0 … , batch -1.
std::vector<WireTensorSpec> wire_inputs(const InputSpec& spec);
WireType wire_type(DType dtype);

}  // namespace torchperf

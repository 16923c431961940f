// The worker side of tune: serves one job (describe the workload, save a reference, measure one
// configuration, compare two interleaved) with the bench runner, and answers in JSON. Errors are
// answered, not thrown, with their kind, so the supervisor can tell a user error from a failure.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "torchperf/bench/bench_options.h"
#include "torchperf/bench/bench_runner.h"

namespace torchperf {

// Called with the configuration string before a measure or compare job runs; test builds use it
// to crash, hang or exhaust memory on purpose.
using FaultHook = std::function<void(const std::string& configuration)>;

nlohmann::json serve_job(const nlohmann::json& request, const FaultHook& fault = nullptr);

// The `__worker` mode: reads one request line from in_fd, writes one response line to out_fd.
int run_worker(int in_fd, int out_fd, const FaultHook& fault = nullptr);

// The wire form of the pieces a job carries.
nlohmann::json to_json(const BenchOptions& options);
BenchOptions bench_options_from_json(const nlohmann::json& j);
nlohmann::json to_json(const WorkloadTraits& traits);
WorkloadTraits workload_traits_from_json(const nlohmann::json& j);
WorkloadDescription workload_description_from_json(const nlohmann::json& j);

}  // namespace torchperf

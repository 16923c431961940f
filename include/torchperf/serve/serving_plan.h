// What `serve` starts, resolved below the CLI (issue 84): its flags parsed once, the model's
// instances loaded and checked, their measured figures in the queue's policy, the shapes
// prepared, and the lines the start-up says. The CLI turns argv into a ServeRequest, binds the
// server this plan holds, prints, and waits for a signal; nothing of serving itself is there.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/bench/bench_options.h"
#include "torchperf/config/configuration_file.h"
#include "torchperf/serve/inference_server.h"
#include "torchperf/serve/model_runner.h"

namespace torchperf {

// serve's flags, the model's among them as the CLI resolved them (its --config, a tune's
// folder); the rest as given, for the plan to parse (UsageError naming the flag).
struct ServeRequest {
  BenchOptions model;
  ServerOptions server;  // host, port, name, max batch, queue, body: as the flags set them
  std::string max_queue_delay = "2ms";
  std::string buckets, shapes = "planned", shape_memory, max_call_memory = "auto";
  std::string shapes_time = "30s";  // the seconds preparing may take per instance
  std::string max_tokens = "0", max_client_batch;
  std::size_t instances = 1;
  bool no_model = false;
  std::optional<ConfigurationFile> file;  // a tune's winner.json that gave the configuration
};

struct ServingPlan {
  ServerOptions server;  // every flag parsed, the bucket edges and the bound by memory set
  std::vector<std::unique_ptr<ModelRunner>> instances;
  // The first line's clauses: what is served ("builtin:mlp with ...", or the echo), how lengths
  // are queued ("" without one), and what the start paid for its artefact ("" for nothing).
  std::string what, lengths, start;
  // The lines after it, in order: what the tune measured, the bucket plan, the shape plan, the
  // call memory; and the warnings the start-up gives on stderr.
  std::vector<std::string> lines, warnings;
};

// The plan for a request: the flags parsed and checked first (before anything loads), then
// `before_loading` with the configuration (the CLI restarts the process there for worker knobs),
// then the instances loaded, their edges checked, a call's memory measured, the bounds checked
// against one sample at the longest length, and the planned shapes prepared. Throws as serve
// does: UsageError for a flag or a bound no request could meet, the model's errors as bench's.
ServingPlan plan_serving(ServeRequest request,
                         const std::function<void(const Configuration&)>& before_loading = nullptr);

// The start-up line on what the tune measured of the configuration served ("" when the file says
// nothing): the figure to hold the server to, a stream's said as such.
std::string tuned_line(const ConfigurationFile& file, const Configuration& served);

// A count flag as a whole number within int64: UsageError naming the flag and `what` it counts.
std::int64_t parse_whole_number(const std::string& text, const std::string& flag,
                                const std::string& what);

}  // namespace torchperf

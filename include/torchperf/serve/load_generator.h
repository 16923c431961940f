// The load generator: requests to an inference server at scheduled times (open loop: Poisson or
// constant arrivals, each request's latency counted from when it was due, so a server that falls
// behind cannot hide its queue), or back to back from N clients (closed loop, for saturation).
// Bounded in requests and in time; a server that is down or dies mid-run ends the run early.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/measure/clock.h"
#include "torchperf/feed/length_distribution.h"
#include "torchperf/serve/arrivals.h"
#include "torchperf/serve/load_summary.h"
#include "torchperf/serve/model_runner.h"

namespace torchperf {

struct LoadOptions {
  std::string url;               // http://HOST:PORT
  std::string model;             // the served model's name
  ArrivalPlan arrivals;          // open loop: process, rate, duration, seed
  std::size_t concurrency = 0;   // > 0: closed loop with this many clients for arrivals.duration_s
  std::size_t connections = 64;  // open loop: clients sending, each with its own connection
  double timeout_s = 10;         // a request unanswered this long is a timeout
  bool binary = true;            // inputs as binary data (else JSON numbers)
  // load --dim: each request's varying dimensions (-1 past the batch in the server's metadata)
  // take one length drawn from it, seeded; none: they take 1.
  std::optional<LengthDistribution> lengths;
  // load --inputs-file: real samples (request_samples.h), request i the file's sample i (cycling),
  // each of batch 1; "" none: values drawn as the server's metadata says (token ids in their
  // range, a mask of ones), else unit normal floats and zeros.
  std::string inputs_file;
};

// UsageError naming the option: a URL that is not http://HOST:PORT, an empty model, a closed
// loop without a duration, no connections, a timeout that is not positive, --dim with
// --inputs-file.
void validate(const LoadOptions& options);

struct LoadRun {
  std::vector<RequestRecord> records;  // requests sent, in no particular order
  double duration_s = 0;               // the schedule's length (open) or the run's (closed)
  ModelSignature signature;            // from the server's metadata
  std::size_t unsent = 0;  // scheduled but not sent: the run ended early (the server went away)
  std::string stopped;     // why it ended early; empty when it ran to the end
};

// fraction of the run done, in [0, 1]
using LoadProgress = std::function<void(double fraction)>;

// Reads the model's metadata, builds one request of batch 1 from it (seeded values), and runs
// the load. Throws RuntimeFailure naming the URL when the server cannot be reached at the start,
// UsageError when it does not serve the model.
// Every time is read from `time` (the project's one clock; sleeps until a request is due use its
// time points, so it must be a real clock); without it, the steady clock.
LoadRun run_load(const LoadOptions& options, const LoadProgress& progress = nullptr);
LoadRun run_load(const LoadOptions& options, TimeSource& time,
                 const LoadProgress& progress = nullptr);

// GET URL/metrics: the server's Prometheus text. RuntimeFailure naming the URL when it fails.
std::string fetch_metrics(const std::string& url);

}  // namespace torchperf

// The HTTP server: the open inference protocol (KServe v2, Triton's REST API) on cpp-httplib, a
// bounded queue that forms batches by the batching policy, and one thread per model instance.
// It binds loopback by default, refuses what it cannot queue with 503, and drains on stop().
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "torchperf/measure/clock.h"
#include "torchperf/serve/batching_policy.h"
#include "torchperf/serve/model_runner.h"
#include "torchperf/serve/server_metrics.h"

namespace torchperf {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: a free port, chosen by the system (bind() says which)
  std::string model_name = "model";
  BatchingPolicy batching;
  std::size_t max_body_bytes = 64u << 20;  // a bigger body gets 413
  // Connections served at once. A connection holds an HTTP thread while it is open, so this must
  // cover the queue and the batches being computed, or clients wait before the queue sees them.
  // 0: max_queue + instances x max_batch + 16.
  std::size_t http_threads = 0;
  std::string version;  // the server's, for GET /v2
};

// UsageError naming the setting: an empty name or host, a port outside 0-65535, a body limit of
// 0, an invalid batching policy.
void validate(const ServerOptions& options);

// The policy the server's queue runs: the options' with the model's buckets and padding rule
// where the options give none (the padding knob's, so that the queue counts the tokens the
// runner pads to), and the memory its calls take as measured at start-up.
BatchingPolicy queue_policy(BatchingPolicy policy, const ModelSignature& signature);

class InferenceServer {
 public:
  // At least one instance; all with the same signature (UsageError otherwise).
  InferenceServer(ServerOptions options, std::vector<std::unique_ptr<ModelRunner>> instances,
                  TimeSource& clock);
  ~InferenceServer();
  InferenceServer(const InferenceServer&) = delete;
  InferenceServer& operator=(const InferenceServer&) = delete;

  // Binds host:port and returns the port; RuntimeFailure naming the address when it cannot.
  int bind();
  // Starts the instances and answers requests until stop(); then finishes what was queued and
  // returns once every instance has stopped.
  void serve();
  // Stops accepting connections and requests; serve() drains and returns. Thread-safe, and
  // idempotent; may come before serve() starts (serve() then returns at once).
  void stop();

  const ServerMetrics& metrics() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace torchperf

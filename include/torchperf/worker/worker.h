// The C++ worker: serves the jobs of protocol.h (describe the workload, save a reference, measure
// one configuration, or be one side of a comparison, timing the blocks the supervisor asks for)
// with the bench runner. Errors are answered, not thrown, with their kind, so the supervisor can
// tell a user error from a failure.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "torchperf/bench/bench_options.h"
#include "torchperf/bench/bench_runner.h"
#include "torchperf/worker/protocol.h"

namespace torchperf {

// Called with the configuration string before a measure or side job runs; test builds use it
// to crash, hang or exhaust memory on purpose.
using FaultHook = std::function<void(const std::string& configuration)>;

nlohmann::json serve_job(const nlohmann::json& request, const FaultHook& fault = nullptr);

// One side of a two-process comparison, served in a worker: made from the job's request (its
// process state entered once), then asked for blocks until its finish job. Each kind of side names
// its own block and finish jobs (bench's "block" and "finish", train's "train-block" and
// "train-finish"): no job name means two messages.
class SideServer {
 public:
  virtual ~SideServer() = default;
  virtual const char* block_job() const = 0;
  virtual const char* finish_job() const = 0;
  // Replies (protocol.h's to_reply): the first answer, then one per block and finish request.
  virtual nlohmann::json ready() = 0;
  virtual nlohmann::json block(const nlohmann::json& request) = 0;
  virtual nlohmann::json finish(const nlohmann::json& request) = 0;
};
using SideFactory = std::function<std::unique_ptr<SideServer>(const nlohmann::json& request)>;

// The `__worker` mode: reads one request line from in_fd, writes one response line to out_fd. A
// side job ("side" for bench, and the kinds in more_sides, such as train's "train-side") then goes
// on reading block requests until "finish" or the end of its input. A "measures" job (answered
// {"ok": true}) then serves measure requests one after another until the end of its input: tune's
// brief points of one process state share such a worker.
int run_worker(int in_fd, int out_fd, const FaultHook& fault = nullptr,
               const std::map<std::string, SideFactory>& more_sides = {});

// The error reply for the exception being handled (call it inside a catch block): its kind is
// the error table's name for its type (include/torchperf/error.h).
nlohmann::json reply_for_current_exception();

// A worker's answered error ({"kind", "message"}) as the exception of its kind: the user's own
// (usage, config, model, workload, compile, diverged …) as themselves; runtime, out-of-memory,
// protocol and unknown kinds as a RuntimeFailure prefixed with what.
[[noreturn]] void rethrow_worker_error(const nlohmann::json& error, const std::string& what);

}  // namespace torchperf

#include "torchperf/worker/worker.h"

#include <malloc.h>
#include <unistd.h>

#include <cerrno>

#include <memory>
#include <optional>
#include <string>

#include "torchperf/bench/bench_side.h"
#include "torchperf/bench/measurement_json.h"
#include "torchperf/compat/torch_error.h"
#include "torchperf/error.h"
#include "torchperf/measure/clock.h"
#include "torchperf/worker/protocol.h"
#include "torchperf/worker/python_worker.h"

namespace torchperf {
namespace {

using nlohmann::json;

json error_response(const std::string& kind, const std::string& message) {
  return error_reply(kind, message);
}

json serve(const json& request, const FaultHook& fault) {
  const std::string job = request_job(request);
  SteadyTimeSource clock;
  if (job == DescribeRequest::kJob) {
    const auto r = from_request<DescribeRequest>(request);
    return to_reply(DescribeReply{describe(r.workload)});
  }
  if (job == ReferenceRequest::kJob) {
    const auto r = from_request<ReferenceRequest>(request);
    // The inputs beside it: a point of the python runtime runs on the same tensors.
    save_reference(r.workload, r.batch, r.path, inputs_beside(r.path));
    return to_reply(EmptyReply{});
  }
  if (job == MeasureRequest::kJob) {
    const auto r = from_request<MeasureRequest>(request);
    BenchOptions o = r.workload;
    o.config = Configuration::parse(r.configuration);
    if (fault) fault(o.config.to_string());
    return to_reply(MeasureReply{run_bench(o, clock)});
  }
  throw WorkerProtocolError("unknown worker job '" + job + "'");
}

}  // namespace

namespace {

// Runs f; an exception becomes an answered error with its kind, so the supervisor can tell a
// user's mistake from a failure.
template <typename F>
json answer(F&& f) {
  try {
    return f();
  } catch (...) {
    return reply_for_current_exception();
  }
}

// Request lines from a file descriptor.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  std::optional<std::string> next() {
    while (buffer_.find('\n') == std::string::npos) {
      char buf[4096];
      const ssize_t n = ::read(fd_, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;  // a signal (the supervisor stops and continues
                                              // an idle worker) is not the end of the input
      if (n <= 0) {
        if (buffer_.empty()) return std::nullopt;
        break;
      }
      buffer_.append(buf, static_cast<std::size_t>(n));
    }
    const auto nl = buffer_.find('\n');
    std::string line = buffer_.substr(0, nl);
    buffer_.erase(0, nl == std::string::npos ? buffer_.size() : nl + 1);
    return line;
  }

 private:
  int fd_;
  std::string buffer_;
};

bool write_line(int fd, const json& response) {
  const std::string out = response.dump() + "\n";
  std::size_t written = 0;
  while (written < out.size()) {
    const ssize_t n = ::write(fd, out.data() + written, out.size() - written);
    if (n <= 0) return false;
    written += static_cast<std::size_t>(n);
  }
  return true;
}

// bench's side: a configuration prepared, then timed block by block until finish, answered with
// the finished measurement.
class BenchSideServer : public SideServer {
 public:
  BenchSideServer(const json& request, const FaultHook& fault) {
    const auto r = from_request<SideRequest>(request);
    const Configuration config = Configuration::parse(r.configuration);
    if (fault) fault(config.to_string());
    side_ = std::make_unique<BenchSide>(r.workload, config, clock_);
    side_->run().enter();
    entered_ = true;
  }
  ~BenchSideServer() override {
    if (entered_) side_->run().exit();
  }
  const char* block_job() const override { return BlockRequest::kJob; }
  const char* finish_job() const override { return FinishRequest::kJob; }
  json ready() override { return to_reply(SideReady{side_->configuration().to_string()}); }
  json block(const json& request) override {
    const auto r = from_request<BlockRequest>(request);
    const Nanoseconds t = side_->run().block(r.iterations);
    return to_reply(BlockReply{static_cast<double>(t.count())});
  }
  json finish(const json& request) override {
    const auto r = from_request<FinishRequest>(request);
    entered_ = false;
    side_->run().exit();
    return to_reply(FinishReply{side_->finish(r.samples, true)});
  }

 private:
  SteadyTimeSource clock_;
  std::unique_ptr<BenchSide> side_;
  bool entered_ = false;
};

// Serves one side: the first answer says it is ready, then one answer per request until finish.
int serve_side(const json& request, const SideFactory& make, LineReader& lines, int out_fd) {
  std::unique_ptr<SideServer> side;
  json response = answer([&]() -> json {
    side = make(request);
    return side->ready();
  });
  if (!write_line(out_fd, response) || !response.value("ok", false)) return 1;
  while (true) {
    const auto line = lines.next();
    if (!line) return 0;  // the supervisor is gone: nothing to answer
    bool done = false;
    response = answer([&]() -> json {
      const json r = json::parse(*line);
      const std::string job = request_job(r);
      if (job == side->block_job()) return side->block(r);
      if (job == side->finish_job()) {
        done = true;
        return side->finish(r);
      }
      throw WorkerProtocolError(std::string("this side serves ") + side->block_job() + " and " +
                                side->finish_job() + " requests, not '" + job + "'");
    });
    if (!write_line(out_fd, response) || !response.value("ok", false)) return 1;
    if (done) return 0;
  }
}

// Brief points of one process state, one after another in this process: each line a measure
// request, answered in turn until the end of the input. An answered error ends the worker: a
// failed measurement may leave the process in a state the next point should not inherit.
int serve_measures(LineReader& lines, int out_fd, const FaultHook& fault) {
  if (!write_line(out_fd, to_reply(EmptyReply{}))) return 1;
  while (const auto line = lines.next()) {
    const json response = answer([&]() -> json {
      const json r = json::parse(*line);
      if (const std::string job = request_job(r); job != MeasureRequest::kJob)
        throw WorkerProtocolError("a measures worker serves only measure jobs, not '" + job + "'");
      return serve(r, fault);
    });
    if (!write_line(out_fd, response) || !response.value("ok", false)) return 1;
    // What this point freed goes back to the kernel before the next one loads: its resident
    // memory then starts near where a fresh worker's would (the cap, the peak), not at this one's.
    ::malloc_trim(0);
  }
  return 0;
}

}  // namespace

json reply_for_current_exception() {
  try {
    throw;
  } catch (const json::exception& e) {
    return error_response(name_of(ErrorKind::kProtocol), std::string("malformed worker request: ") + e.what());
  } catch (const WorkerProtocolError& e) {
    return error_response(name_of(ErrorKind::kProtocol), e.what());
  } catch (const Error& e) {
    // A failure whose cause is memory (a Python side's, rethrown; a CUDA graph's capture) is
    // answered as one: the point ran out of memory, it did not fail otherwise.
    const bool memory = e.kind() == ErrorKind::kRuntime && compat::is_out_of_memory_message(e.what());
    return error_response(name_of(memory ? ErrorKind::kResourceLimit : e.kind()), e.what());
  } catch (const std::bad_alloc&) {
    return error_response(name_of(ErrorKind::kResourceLimit), "out of memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    const std::string message = e.what();
    return error_response(name_of(compat::is_out_of_memory_message(message) ? ErrorKind::kResourceLimit
                                                                             : ErrorKind::kRuntime),
                          message);
  }
}

void rethrow_worker_error(const json& error, const std::string& what) {
  const std::string message = error.value("message", what + " failed");
  const auto kind = error_kind_named(error.value("kind", "runtime"));
  // A failure of the run itself says which run; the user's own mistakes speak for themselves.
  if (!kind || *kind == ErrorKind::kRuntime || *kind == ErrorKind::kProtocol)
    throw RuntimeFailure(what + ": " + message);
  // Out of memory is a bound the run met, and keeps its kind (the ladder skips a batch that
  // does not fit; the exit code says which bound), named by its run.
  if (*kind == ErrorKind::kResourceLimit) throw ResourceLimit(what + ": " + message);
  throw_error(*kind, message);
}

json serve_job(const json& request, const FaultHook& fault) {
  return answer([&] { return serve(request, fault); });
}

int run_worker(int in_fd, int out_fd, const FaultHook& fault,
               const std::map<std::string, SideFactory>& more_sides) {
  LineReader lines(in_fd);
  const std::string line = lines.next().value_or("");
  json request;
  try {
    request = json::parse(line);
  } catch (const json::exception& e) {
    write_line(out_fd,
               error_response(name_of(ErrorKind::kProtocol), std::string("malformed worker request: ") + e.what()));
    return 1;
  }
  std::string job;
  try {
    job = request_job(request);
  } catch (const WorkerProtocolError& e) {
    write_line(out_fd, error_response(name_of(ErrorKind::kProtocol), e.what()));
    return 1;
  }
  if (job == SideRequest::kJob)
    return serve_side(
        request, [&](const json& r) { return std::make_unique<BenchSideServer>(r, fault); }, lines,
        out_fd);
  if (const auto it = more_sides.find(job); it != more_sides.end())
    return serve_side(request, it->second, lines, out_fd);
  if (job == MeasuresRequest::kJob) return serve_measures(lines, out_fd, fault);
  const json response = serve_job(request, fault);
  if (!write_line(out_fd, response)) return 1;
  return response.value("ok", false) ? 0 : 1;
}

}  // namespace torchperf

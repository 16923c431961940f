// Small Kineto traces written in tests with known timings (µs), for the trace part's tests: the
// events PyTorch's profiler writes, with the fields it writes.
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>

namespace torchperf::testing {

class TraceText {
 public:
  TraceText& op(const std::string& name, double ts, double dur, int tid = 1,
                const std::string& args = "") {
    return add(fmt::format(
        R"({{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 10, "tid": {}, "ts": {}, "dur": {}, "args": {{{}}}}})",
        name, tid, ts, dur, args));
  }
  TraceText& annotation(const std::string& name, double ts, double dur, int tid = 1) {
    return add(fmt::format(
        R"({{"ph": "X", "cat": "user_annotation", "name": "{}", "pid": 10, "tid": {}, "ts": {}, "dur": {}}})",
        name, tid, ts, dur));
  }
  TraceText& step(int number, double ts, double dur) {
    return annotation("ProfilerStep#" + std::to_string(number), ts, dur);
  }
  TraceText& runtime(const std::string& name, double ts, double dur, long correlation,
                     int tid = 1) {
    return add(fmt::format(
        R"({{"ph": "X", "cat": "cuda_runtime", "name": "{}", "pid": 10, "tid": {}, "ts": {}, "dur": {}, "args": {{"correlation": {}, "cbid": 211}}}})",
        name, tid, ts, dur, correlation));
  }
  TraceText& kernel(const std::string& name, double ts, double dur, long correlation,
                    int stream = 7) {
    return add(fmt::format(
        R"({{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": {}, "ts": {}, "dur": {}, "args": {{"device": 0, "stream": {}, "correlation": {}}}}})",
        name, stream, ts, dur, stream, correlation));
  }
  TraceText& memcpy(const std::string& name, double ts, double dur, long correlation, long bytes) {
    return add(fmt::format(
        R"({{"ph": "X", "cat": "gpu_memcpy", "name": "{}", "pid": 0, "tid": 7, "ts": {}, "dur": {}, "args": {{"device": 0, "stream": 7, "correlation": {}, "bytes": {}}}}})",
        name, ts, dur, correlation, bytes));
  }
  TraceText& flow(long id, double ts) {
    return add(fmt::format(
        R"({{"ph": "s", "id": {}, "pid": 10, "tid": 1, "ts": {}, "cat": "ac2g", "name": "ac2g"}})",
        id, ts));
  }
  TraceText& raw(const std::string& event) { return add(event); }
  // deviceProperties of one device: an NVIDIA A100 (compute 8.0) unless said otherwise.
  TraceText& device(const std::string& name = "NVIDIA A100-SXM4-40GB", int major = 8) {
    devices_ = fmt::format(
        R"([{{"id": 0, "name": "{}", "totalGlobalMem": 42297524224, "computeMajor": {}, "computeMinor": 0}}])",
        name, major);
    return *this;
  }
  TraceText& rank(int rank, int world) {
    distributed_ =
        fmt::format(R"({{"backend": "nccl", "rank": {}, "world_size": {}}})", rank, world);
    return *this;
  }

  std::string json() const {
    std::string out = "{\n  \"schemaVersion\": 1,\n";
    if (!devices_.empty()) out += "  \"deviceProperties\": " + devices_ + ",\n";
    if (!distributed_.empty()) out += "  \"distributedInfo\": " + distributed_ + ",\n";
    out += "  \"traceEvents\": [\n";
    for (std::size_t i = 0; i < events_.size(); ++i)
      out += "  " + events_[i] + (i + 1 < events_.size() ? ",\n" : "\n");
    out += "  ],\n  \"displayTimeUnit\": \"ms\"\n}\n";
    return out;
  }

 private:
  TraceText& add(std::string event) {
    events_.push_back(std::move(event));
    return *this;
  }
  std::vector<std::string> events_;
  std::string devices_, distributed_;
};

// Six device events on stream 7 with their launches, every instant worked out by hand (µs):
// gemm_a 10-20 (launched at 5), gemm_b 22-30 (at 9), an NCCL kernel 25-35 (at 13; under gemm_b
// for 5), gemm_c 60-70 (at 50, after the stream went idle at 35), a copy 72-80 (at 56) and
// gemm_d 92-97 (at 40). The overview and the device summary tests both read it.
inline TraceText& add_six_device_events(TraceText& t) {
  return t.runtime("cudaLaunchKernel", 5, 3, 1)
      .kernel("gemm_a", 10, 10, 1)
      .runtime("cudaLaunchKernel", 9, 3, 2)
      .kernel("gemm_b", 22, 8, 2)
      .runtime("cudaLaunchKernel", 13, 1, 5)
      .kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 25, 10, 5)
      .runtime("cudaLaunchKernel", 50, 5, 3)
      .kernel("gemm_c", 60, 10, 3)
      .runtime("cudaMemcpyAsync", 56, 1, 6)
      .memcpy("Memcpy HtoD (Pinned -> Device)", 72, 8, 6, 1 << 20)
      .runtime("cudaLaunchKernel", 40, 1, 4)
      .kernel("gemm_d", 92, 5, 4);
}

}  // namespace torchperf::testing

// A profiler trace read into compact records: what the analyses need of each event (times in
// integer nanoseconds, names interned), the steps, the devices, and what was skipped and why.
// Torch-free; read_trace (trace_reader.h) builds it.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace torchperf {

// Interned strings: names and input shapes are stored once; events hold their index.
class StringPool {
 public:
  // Not copyable: a copy's index would point into the original's strings.
  StringPool() = default;
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;
  StringPool(StringPool&&) = default;
  StringPool& operator=(StringPool&&) = default;
  std::uint32_t intern(std::string_view text);
  const std::string& at(std::uint32_t id) const { return strings_[id]; }
  std::size_t size() const { return strings_.size(); }

 private:
  // A deque never moves its elements, so the views in index_ stay valid (short strings too).
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, std::uint32_t> index_;
};

enum class HostKind : std::uint8_t {
  kOperator,       // cpu_op (an ATen or TorchScript operator; the older form's events)
  kAnnotation,     // user_annotation / record_function ranges (ProfilerStep#N excepted)
  kRuntime,        // cuda_runtime, cuda_driver (HIP's too): launches, copies, syncs
  kDataLoader,     // a DataLoader's __next__, or torchperf train's "data wait" phase
  kCommunication,  // a host collective (gloo:all_reduce …), which a CPU-only rank has
  kCopy,           // torchperf train's "copy" phase
};

struct HostEvent {
  std::int64_t start = 0, duration = 0;  // ns
  std::int64_t correlation = -1;         // runtime calls: the launch's correlation id
  std::uint32_t name = 0;
  std::uint32_t thread = 0;  // index into Trace::threads
  std::uint32_t shapes = 0;  // "Input Dims" as written (0: none)
  HostKind kind = HostKind::kOperator;
  std::int64_t end() const { return start + duration; }
};

enum class DeviceKind : std::uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kSync,  // cuda_sync: the device side of an event or stream synchronisation
};

enum class CopyKind : std::uint8_t {
  kNone,
  kHostToDevicePageable,
  kHostToDevicePinned,
  kHostToDevice,
  kDeviceToHost,
  kDeviceToDevice,
  kOther
};

struct DeviceEvent {
  std::int64_t start = 0, duration = 0;  // ns
  std::int64_t correlation = -1;
  std::uint64_t bytes = 0;  // copies and sets
  std::uint32_t name = 0;
  std::int32_t device = 0, stream = 0;
  DeviceKind kind = DeviceKind::kKernel;
  CopyKind copy = CopyKind::kNone;
  bool communication = false;  // an NCCL/RCCL kernel
  std::int64_t end() const { return start + duration; }
};

// What a device event does, as Holistic Trace Analysis classes it: a copy or set moves memory,
// an NCCL/RCCL kernel communicates, every other kernel computes.
enum class KernelClass { kComputation, kCommunication, kMemory };
inline constexpr std::size_t kKernelClasses = 3;
inline KernelClass kernel_class(const DeviceEvent& e) {
  return e.kind != DeviceKind::kKernel ? KernelClass::kMemory
         : e.communication             ? KernelClass::kCommunication
                                       : KernelClass::kComputation;
}

struct Step {
  std::int64_t number = 0;          // N of ProfilerStep#N
  std::int64_t start = 0, end = 0;  // the host range
};

struct DeviceInfo {
  int id = 0;
  std::string name;
  int compute_major = 0, compute_minor = 0;
  std::uint64_t memory_bytes = 0;
  bool amd() const;
  // Tensor cores (NVIDIA compute 7.0+) or matrix cores (AMD CDNA, reported as 9.x).
  bool has_matrix_units() const;
};

struct TraceSkips {
  std::uint64_t missing_field = 0;  // an "X" event without name, ts or dur
  std::uint64_t wrong_type = 0;     // a field of the wrong JSON type, or a negative duration
  std::uint64_t malformed = 0;      // an event that is not valid JSON
  std::uint64_t total() const { return missing_field + wrong_type + malformed; }
  std::string first_problem;  // the first one, with its byte offset
};

struct Trace {
  std::string path;
  std::string form;  // "kineto" (object with traceEvents) or "array" (the older form)
  int rank = -1;     // distributedInfo.rank, or -1
  int world_size = 0;
  std::string backend;  // distributedInfo.backend
  std::vector<DeviceInfo> devices;
  StringPool strings;                // string 0 is ""
  std::vector<std::string> threads;  // "pid/tid" as written
  std::vector<HostEvent> host;
  std::vector<DeviceEvent> device;
  std::vector<Step> steps;    // sorted by start
  std::uint64_t events = 0;   // elements of traceEvents
  std::uint64_t ignored = 0;  // flows, metadata, counters, instants, python functions …
  TraceSkips skips;
  std::uint64_t file_bytes = 0;  // on disk
  std::uint64_t json_bytes = 0;  // of JSON text (the same unless gzip)
  bool compressed = false;
  std::int64_t first_ns = 0, last_ns = 0;  // the analysed events' span

  const std::string& name(std::uint32_t id) const { return strings.at(id); }
};

}  // namespace torchperf

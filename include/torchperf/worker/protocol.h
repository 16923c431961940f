// The protocol between a supervisor and its workers (docs/worker-protocol.md): one request type and
// one reply type per job, each written, read and described from one field list (its fields()),
// and a version every request carries, so that a worker of another build is a clear error rather
// than a misread field. The C++ worker and the Python worker (python/torchperf/worker.py) follow
// the same lists: `torchperf __protocol` prints them, and the Python tests check against it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/bench/bench_options.h"
#include "torchperf/bench/bench_runner.h"
#include "torchperf/bench/measurement.h"
#include "torchperf/measure/sampler.h"
#include "torchperf/process/watched_child.h"
#include "torchperf/worker/worker_process.h"

namespace torchperf {

inline constexpr int kWorkerProtocolVersion = 1;

// A request the worker cannot take as it stands: another protocol version, a missing or mistyped
// field, a job it does not serve. Answered as the error kind "protocol".
struct WorkerProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- The messages. A reply without fields is just {"ok": true}.

struct DescribeRequest {
  static constexpr const char* kJob = "describe";
  BenchOptions workload;
  template <typename V>
  void fields(V& v) {
    v("workload", workload);
  }
};
struct DescribeReply {
  WorkloadDescription description;
  template <typename V>
  void fields(V& v) {
    v("description", description);
  }
};

// The reference outputs (and FLOPs) at one batch, saved to path for every point's worker.
struct ReferenceRequest {
  static constexpr const char* kJob = "reference";
  BenchOptions workload;
  std::string batch;
  std::string path;
  template <typename V>
  void fields(V& v) {
    v("workload", workload);
    v("batch", batch);
    v("path", path);
  }
};
struct EmptyReply {
  template <typename V>
  void fields(V&) {}
};

// One configuration measured whole in this worker.
struct MeasureRequest {
  static constexpr const char* kJob = "measure";
  BenchOptions workload;
  std::string configuration;
  template <typename V>
  void fields(V& v) {
    v("workload", workload);
    v("configuration", configuration);
  }
};
struct MeasureReply {
  BenchResult result;
  template <typename V>
  void fields(V& v) {
    v("result", result);
  }
};

// Opens a worker that brief points of one process state share: measure requests follow, one after
// another, until the end of the input. Answered with an EmptyReply.
struct MeasuresRequest {
  static constexpr const char* kJob = "measures";
  template <typename V>
  void fields(V&) {}
};

// One side of a two-process comparison: the configuration prepared (its process state entered
// once), then blocks timed on request until finish.
struct SideRequest {
  static constexpr const char* kJob = "side";
  BenchOptions workload;
  std::string configuration;
  template <typename V>
  void fields(V& v) {
    v("workload", workload);
    v("configuration", configuration);
  }
};
struct SideReady {
  std::string configuration;  // as the side resolved it
  template <typename V>
  void fields(V& v) {
    v("configuration", configuration);
  }
};
struct BlockRequest {
  static constexpr const char* kJob = "block";
  std::size_t iterations = 0;
  template <typename V>
  void fields(V& v) {
    v("iterations", iterations);
  }
};
struct BlockReply {
  double ns = 0;  // the block's wall time, the device synchronised at its end
  template <typename V>
  void fields(V& v) {
    v("ns", ns);
  }
};
struct FinishRequest {
  static constexpr const char* kJob = "finish";
  SampleSet samples;  // the supervisor's samples of this side
  template <typename V>
  void fields(V& v) {
    v("samples", samples);
  }
};
struct FinishReply {
  Measurement measurement;
  template <typename V>
  void fields(V& v) {
    v("measurement", measurement);
  }
};

// The Python worker's side (python/torchperf/worker.py): the model as the user has it, the inputs
// from a file the C++ side wrote (both runtimes run on the same tensors), and the settings of
// the Python runtime. Ready with the set-up facts; blocks answer PythonBlockReply; finish saves
// one more call's outputs for the C++ side's guard.
struct PythonSideRequest {
  static constexpr const char* kJob = "python-side";
  std::string model_kind;  // program | module | torchscript | builtin (NAME@SEED) | python
  std::string model;       // a file, or MODULE:CALLABLE for python
  std::string inputs;      // a torch.save file of the input tensors
  // A torch.save tuple of batches (tuples of tensors) whose shapes vary (--dim), or "": a timed
  // call is then one pass over them (save_stream wrote it).
  std::string stream;
  std::string graph;       // eager | compile | compile-reduce-overhead | compile-max-autotune …
  std::string precision;   // fp32 | bf16 | fp16 (weights converted) | bf16-autocast | fp16-autocast
  std::string format;      // contiguous | channels_last
  std::string grad;        // on | no_grad | inference
  std::int64_t threads = 0;
  std::int64_t interop_threads = 0;
  std::string device;
  std::string cudnn_benchmark = "n/a";  // off | on | n/a (not on CUDA)
  std::string tf32 = "n/a";             // default | off | on | n/a
  // Where torch.compile's cache artifacts go once this side compiled (""): a shared worker
  // serves many points, each with its own file, so it travels with the side, not the process.
  std::string compile_artifacts;
  // int8's calibration samples (BenchOptions::calibration_file), or "": the side's own inputs.
  std::string calibration;
  // Which of the worker's open sides this is: a head-to-head pair of one process state keeps
  // both of its sides open in one worker (their graphs compiled there once), blocks alternating.
  std::int64_t slot = 0;
  template <typename V>
  void fields(V& v) {
    v("slot", slot);
    v("model_kind", model_kind);
    v("model", model);
    v("inputs", inputs);
    v("stream", stream);
    v("graph", graph);
    v("precision", precision);
    v("format", format);
    v("grad", grad);
    v("threads", threads);
    v("interop_threads", interop_threads);
    v("device", device);
    v("cudnn_benchmark", cudnn_benchmark);
    v("tf32", tf32);
    v("compile_artifacts", compile_artifacts);
    v("calibration", calibration);
  }
};
struct PythonSideReady {
  double setup_ms = 0;
  double compile_s = -1;  // the first call under torch.compile; -1 when eager
  // The compiled callable an earlier side of this worker compiled (compile_s is then a first
  // call's time, not a compile's).
  bool compile_reused = false;
  double stream_warm_s = -1;        // a stream's first pass, before timing (-1: no stream)
  std::int64_t stream_graphs = 0;   // graphs torch.compile compiled in that pass
  std::int64_t graph_break_count = 0;
  std::vector<std::string> graph_break_reasons;  // the first three
  std::int64_t rss_before_bytes = 0;
  std::map<std::string, std::string> process;  // runtime, python, torch, threads, interop_threads, allocator
  template <typename V>
  void fields(V& v) {
    v("setup_ms", setup_ms);
    v("compile_s", compile_s);
    v("compile_reused", compile_reused);
    v("stream_warm_s", stream_warm_s);
    v("stream_graphs", stream_graphs);
    v("graph_break_count", graph_break_count);
    v("graph_break_reasons", graph_break_reasons);
    v("rss_before_bytes", rss_before_bytes);
    v("process", process);
  }
};
struct PythonBlockReply {
  double ns = 0;
  std::int64_t minor_faults = 0;
  template <typename V>
  void fields(V& v) {
    v("ns", ns);
    v("minor_faults", minor_faults);
  }
};
struct PythonBlockRequest {
  static constexpr const char* kJob = "python-block";
  std::int64_t slot = 0;  // the side's (PythonSideRequest::slot)
  std::size_t iterations = 0;
  template <typename V>
  void fields(V& v) {
    v("slot", slot);
    v("iterations", iterations);
  }
};
struct PythonFinishRequest {
  static constexpr const char* kJob = "python-finish";
  std::string outputs;  // where one more call's outputs are saved, in the reference's format
  // A stream's padding check ("" none): its samples, unpadded, as the C++ side saved them (a tuple
  // of (batch index, tuple of tensors)); each one's batch and itself alone are run, their outputs
  // saved to PADDING_OUTPUTS-I-padded.pt and PADDING_OUTPUTS-I-alone.pt.
  std::string padding_check;
  std::string padding_outputs;
  std::int64_t slot = 0;  // the side's (PythonSideRequest::slot); finishing closes it
  template <typename V>
  void fields(V& v) {
    v("slot", slot);
    v("outputs", outputs);
    v("padding_check", padding_check);
    v("padding_outputs", padding_outputs);
  }
};
struct PythonFinishReply {
  std::int64_t peak_memory_bytes = 0;
  bool peak_memory_reset = false;  // whether the high-water mark was reset after set-up
  std::int64_t outputs = 0;        // tensors saved
  template <typename V>
  void fields(V& v) {
    v("peak_memory_bytes", peak_memory_bytes);
    v("peak_memory_reset", peak_memory_reset);
    v("outputs", outputs);
  }
};

// A tensor in a file both processes map (process/shared_region.h): its dtype as torch names it
// ("float32", "int64", "bfloat16"), its shape, and where its bytes start.
struct RegionTensor {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::int64_t offset = 0;
};
void to_json(nlohmann::json& j, const RegionTensor& t);
void from_json(const nlohmann::json& j, RegionTensor& t);

// One call served by a Python side (issue 84: serve hosting a Python or engine winner): the
// inputs lie in `region` (region_size bytes, written by the server), the worker writes the
// outputs to the file `outputs` (grown as it needs) and names them. With measure_memory, the
// reply's peak_bytes is the most resident memory the call added (its set-up's freed memory given
// back first); else 0. A call that fails is answered as such and the worker serves the next.
struct PythonCallRequest {
  static constexpr const char* kJob = "python-call";
  std::int64_t slot = 0;
  std::string region;
  std::int64_t region_size = 0;
  std::vector<RegionTensor> inputs;
  std::string outputs;
  bool measure_memory = false;
  template <typename V>
  void fields(V& v) {
    v("slot", slot);
    v("region", region);
    v("region_size", region_size);
    v("inputs", inputs);
    v("outputs", outputs);
    v("measure_memory", measure_memory);
  }
};
struct PythonCallReply {
  std::vector<RegionTensor> outputs;
  std::int64_t region_size = 0;
  std::int64_t peak_bytes = 0;
  template <typename V>
  void fields(V& v) {
    v("outputs", outputs);
    v("region_size", region_size);
    v("peak_bytes", peak_bytes);
  }
};

// ---- A field's wire form. Plain values (strings, numbers, booleans, maps of strings) are JSON's
// own; torchperf's types have overloads here, or beside their type (found by argument-dependent
// lookup), with a name for the schema.

template <typename T>
nlohmann::json wire_value(const T& value) {
  return nlohmann::json(value);
}
template <typename T>
void read_wire(const nlohmann::json& j, T& value) {
  value = j.get<T>();
}
template <typename T>
struct is_wire_array : std::false_type {};
template <typename T>
struct is_wire_array<std::vector<T>> : std::true_type {};
template <typename T>
std::string wire_type(const T*) {
  if constexpr (std::is_same_v<T, bool>) return "boolean";
  else if constexpr (is_wire_array<T>::value) return "array";
  else if constexpr (std::is_integral_v<T>) return "integer";
  else if constexpr (std::is_floating_point_v<T>) return "number";
  else if constexpr (std::is_same_v<T, std::string>) return "string";
  else return "object";
}

// How a child ended, by its name (process/watched_child.h).
inline nlohmann::json wire_value(const Ending& e) { return to_string(e); }
void read_wire(const nlohmann::json& j, Ending& e);
inline std::string wire_type(const Ending*) { return "ending"; }
// A field that carries another message whole (a node job's worker request, a worker's reply).
inline std::string wire_type(const nlohmann::json*) { return "message"; }

nlohmann::json wire_value(const BenchOptions& o);  // the references travel in it
void read_wire(const nlohmann::json& j, BenchOptions& o);
inline std::string wire_type(const BenchOptions*) { return "workload"; }
// The traits' JSON form (the description carries it).
nlohmann::json to_json(const WorkloadTraits& traits);
WorkloadTraits workload_traits_from_json(const nlohmann::json& j);
nlohmann::json wire_value(const WorkloadDescription& d);
void read_wire(const nlohmann::json& j, WorkloadDescription& d);
inline std::string wire_type(const WorkloadDescription*) { return "description"; }
nlohmann::json wire_value(const BenchResult& r);
void read_wire(const nlohmann::json& j, BenchResult& r);
inline std::string wire_type(const BenchResult*) { return "result"; }
nlohmann::json wire_value(const Measurement& m);
void read_wire(const nlohmann::json& j, Measurement& m);
inline std::string wire_type(const Measurement*) { return "measurement"; }
nlohmann::json wire_value(const SampleSet& s);
void read_wire(const nlohmann::json& j, SampleSet& s);
inline std::string wire_type(const SampleSet*) { return "samples"; }

// ---- The visitors that walk a message's field list.

class WireWriter {
 public:
  explicit WireWriter(nlohmann::json& out) : out_(out) {}
  template <typename T>
  void operator()(const char* name, const T& value) {
    out_[name] = wire_value(value);
  }

 private:
  nlohmann::json& out_;
};

class WireReader {
 public:
  WireReader(const nlohmann::json& in, std::string what) : in_(in), what_(std::move(what)) {}
  template <typename T>
  void operator()(const char* name, T& value) {
    if (!in_.contains(name)) throw WorkerProtocolError(what_ + " has no field '" + name + "'");
    try {
      read_wire(in_.at(name), value);
    } catch (const std::exception& e) {  // JSON's own type errors, and a name not of its set
      throw WorkerProtocolError(what_ + ": field '" + name + "' is not of type " +
                                wire_type(static_cast<const T*>(nullptr)) + " (" + e.what() +
                                ")");
    }
  }

 private:
  const nlohmann::json& in_;
  std::string what_;
};

class WireSchema {
 public:
  explicit WireSchema(nlohmann::json& out) : out_(out) {}
  template <typename T>
  void operator()(const char* name, const T&) {
    out_[name] = wire_type(static_cast<const T*>(nullptr));
  }

 private:
  nlohmann::json& out_;
};

// ---- Envelopes: {"protocol": 1, "job": NAME, fields…} and {"ok": true, fields…}.

// The job a request names, after its protocol version is checked (WorkerProtocolError).
std::string request_job(const nlohmann::json& request);

template <typename M>
nlohmann::json to_request(const M& message) {
  nlohmann::json j = {{"protocol", kWorkerProtocolVersion}, {"job", M::kJob}};
  WireWriter w(j);
  const_cast<M&>(message).fields(w);  // the writer only reads
  return j;
}

template <typename M>
M from_request(const nlohmann::json& request) {
  const std::string job = request_job(request);
  if (job != M::kJob)
    throw WorkerProtocolError("expected a '" + std::string(M::kJob) + "' request, got '" + job +
                              "'");
  M message;
  WireReader r(request, "the '" + job + "' request");
  message.fields(r);
  return message;
}

// A message that is neither a request nor a reply (a node job, its outcome, a Ray bridge
// operation): its fields alone, read with each field's name in the error.
template <typename M>
nlohmann::json to_message(const M& message) {
  nlohmann::json j = nlohmann::json::object();
  WireWriter w(j);
  const_cast<M&>(message).fields(w);
  return j;
}
template <typename M>
void from_message(const nlohmann::json& j, M& message, const std::string& what) {
  if (!j.is_object()) throw WorkerProtocolError(what + " is not a JSON object");
  WireReader r(j, what);
  message.fields(r);
}
template <typename M>
nlohmann::json message_schema() {
  nlohmann::json fields = nlohmann::json::object();
  WireSchema s(fields);
  M message;
  message.fields(s);
  return fields;
}

template <typename M>
nlohmann::json to_reply(const M& message) {
  nlohmann::json j = {{"ok", true}};
  WireWriter w(j);
  const_cast<M&>(message).fields(w);
  return j;
}

// A reply's fields; the caller has checked "ok" (an error reply is rethrown with its kind).
template <typename M>
M from_reply(const nlohmann::json& reply, const std::string& what) {
  M message;
  WireReader r(reply, "the worker's answer to " + what);
  message.fields(r);
  return message;
}

nlohmann::json error_reply(const std::string& kind, const std::string& message);

// Every job's request and reply fields with their wire types, and the version: what
// `torchperf __protocol` prints. extra adds jobs served beyond the worker part's (train's side).
template <typename Request, typename Reply>
void add_to_schema(nlohmann::json& schema, const std::string& reply_name = "reply") {
  nlohmann::json request = nlohmann::json::object(), reply = nlohmann::json::object();
  WireSchema rq(request), rp(reply);
  // Named objects: GCC 12 at -O3 takes a value-initialised temporary's strings for uninitialised.
  Request request_message;
  Reply reply_message;
  request_message.fields(rq);
  reply_message.fields(rp);
  schema["jobs"][Request::kJob] = {{"request", request}, {reply_name, reply}};
}
nlohmann::json worker_protocol_schema();

}  // namespace torchperf

#include <cmath>

#include "torchperf/worker/protocol.h"

#include "torchperf/runtime/runtime.h"

#include "torchperf/bench/measurement_json.h"
#include "torchperf/error.h"

namespace torchperf {

using nlohmann::json;

std::string request_job(const json& request) {
  if (!request.is_object()) throw WorkerProtocolError("a worker request is a JSON object");
  const auto version = request.find("protocol");
  if (version == request.end() || !version->is_number_integer())
    throw WorkerProtocolError("a worker request without a protocol version (this worker speaks " +
                              std::to_string(kWorkerProtocolVersion) + ")");
  if (version->get<int>() != kWorkerProtocolVersion)
    throw WorkerProtocolError("the request speaks worker protocol " +
                              std::to_string(version->get<int>()) + ", this worker " +
                              std::to_string(kWorkerProtocolVersion) +
                              ": the supervisor and the worker come from different builds");
  const auto job = request.find("job");
  if (job == request.end() || !job->is_string())
    throw WorkerProtocolError("a worker request without a job name");
  return job->get<std::string>();
}

json error_reply(const std::string& kind, const std::string& message) {
  return {{"ok", false}, {"error", {{"kind", kind}, {"message", message}}}};
}

json wire_value(const BenchOptions& o) {
  json j = {{"model", o.model},
            {"input_spec", o.input_spec},
            {"dims", o.dims},
            {"inputs_file", o.inputs_file},
            {"calibration_file", o.calibration_file},
            {"python_module", o.python_module},
            {"time_s", o.time_s},
            {"stream_timed_batches", o.stream_timed_batches},
            {"stream_batch", o.stream_batch},
            {"leader_samples_per_s", o.leader_samples_per_s},
            {"check_padding", o.check_padding},
            {"stop_when_decided", o.stop_when_decided},
            {"target_relative_ci", o.target_relative_ci},
            {"device", o.device},
            {"seed", o.seed},
            {"count_flops", o.count_flops},
            {"stop_when_a_call_exceeds_time", o.stop_when_a_call_exceeds_time},
            {"memory_cap_bytes", o.memory_cap_bytes},
            {"compile_timeout_s", o.compile_timeout_s},
            {"references", o.reference_files}};
  return j;
}

void read_wire(const json& j, BenchOptions& o) {
  o = BenchOptions{};
  o.model = j.at("model").get<std::string>();
  o.input_spec = j.at("input_spec").get<std::string>();
  o.dims = j.value("dims", std::vector<std::string>{});
  o.inputs_file = j.at("inputs_file").get<std::string>();
  o.calibration_file = j.value("calibration_file", std::string());
  o.python_module = j.at("python_module").get<std::string>();
  o.time_s = j.at("time_s").get<double>();
  o.stream_timed_batches = j.value("stream_timed_batches", kFullTimedBatches);
  o.stream_batch = j.value("stream_batch", std::int64_t{0});
  o.leader_samples_per_s = j.value("leader_samples_per_s", 0.0);
  o.check_padding = j.value("check_padding", true);
  o.stop_when_decided = j.value("stop_when_decided", false);
  o.target_relative_ci = j.at("target_relative_ci").get<double>();
  o.device = j.at("device").get<std::string>();
  o.seed = j.at("seed").get<std::uint64_t>();
  o.count_flops = j.at("count_flops").get<bool>();
  o.stop_when_a_call_exceeds_time = j.at("stop_when_a_call_exceeds_time").get<bool>();
  o.memory_cap_bytes = j.at("memory_cap_bytes").get<std::int64_t>();
  o.compile_timeout_s = j.at("compile_timeout_s").get<double>();
  o.reference_files = j.at("references").get<std::map<std::string, std::string>>();
}

json to_json(const WorkloadTraits& t) {
  return {{"torchscript", t.torchscript},
          {"convolutional", t.convolutional},
          {"linear", t.linear},
          {"conv_bias_before_bn", t.conv_bias_before_bn},
          {"hidden_linear_sizes", t.hidden_linear_sizes},
          {"image_input", t.image_input},
          {"floating_input", t.floating_input},
          {"cuda", t.cuda},
          {"cpu_fuser", t.cpu_fuser},
          {"inputs_from_file", t.inputs_from_file},
          {"saved_training", t.saved_training},
          {"can_train_mode", t.can_train_mode},
          {"usable_cores", t.usable_cores},
          {"default_threads", t.default_threads},
          {"default_interop_threads", t.default_interop_threads},
          {"default_batch", t.default_batch},
          {"exported_program", t.exported_program},
          {"dynamic_batch", t.dynamic_batch},
          {"batch_min", t.batch_min},
          {"batch_max", t.batch_max},
          {"exported_shape", t.exported_shape},
          {"torchscript_form", t.torchscript_form},
          {"program_form", t.program_form},
          {"caller_module", t.caller_module},
          {"engines", t.engines},
          {"cuda_engines", t.cuda_engines},
          {"named_dims", t.named_dims},
          {"suggested_buckets", t.suggested_buckets},
          {"stream_batch_longest", t.stream_batch_longest},
          {"stream_longest", t.stream_longest},
          {"program",
           {{"dynamic", t.program.dynamic},
            {"min", t.program.min},
            {"max", t.program.max},
            {"exported", t.program.exported},
            {"shape", t.program.shape}}}};
}

WorkloadTraits workload_traits_from_json(const json& j) {
  WorkloadTraits t;
  t.torchscript = j.at("torchscript").get<bool>();
  t.convolutional = j.at("convolutional").get<bool>();
  t.linear = j.at("linear").get<bool>();
  t.conv_bias_before_bn = j.at("conv_bias_before_bn").get<bool>();
  t.hidden_linear_sizes = j.at("hidden_linear_sizes").get<std::vector<long long>>();
  t.image_input = j.at("image_input").get<bool>();
  t.floating_input = j.at("floating_input").get<bool>();
  t.cuda = j.at("cuda").get<bool>();
  t.cpu_fuser = j.at("cpu_fuser").get<bool>();
  t.inputs_from_file = j.at("inputs_from_file").get<bool>();
  t.saved_training = j.at("saved_training").get<bool>();
  t.can_train_mode = j.at("can_train_mode").get<bool>();
  t.usable_cores = j.at("usable_cores").get<int>();
  t.default_threads = j.at("default_threads").get<int>();
  t.default_interop_threads = j.at("default_interop_threads").get<int>();
  t.default_batch = j.at("default_batch").get<long long>();
  t.exported_program = j.at("exported_program").get<bool>();
  t.dynamic_batch = j.at("dynamic_batch").get<bool>();
  t.batch_min = j.at("batch_min").get<long long>();
  t.batch_max = j.at("batch_max").get<long long>();
  t.exported_shape = j.at("exported_shape").get<std::string>();
  // The forms a model comes in; a description written before they were (a journal resumed)
  // has the one form it was loaded in.
  t.torchscript_form = j.value("torchscript_form", t.torchscript);
  t.program_form = j.value("program_form", t.exported_program);
  t.caller_module = j.value("caller_module", false);
  t.engines = j.value("engines", std::vector<std::string>{});
  t.cuda_engines = j.value("cuda_engines", std::vector<std::string>{});
  t.named_dims = j.value("named_dims", std::vector<std::string>{});
  t.suggested_buckets = j.value("suggested_buckets", std::string());
  t.stream_batch_longest = j.value("stream_batch_longest", std::vector<std::int64_t>{});
  t.stream_longest = j.value("stream_longest", std::int64_t{0});
  if (j.contains("program") && j.at("program").is_object()) {
    const json& p = j.at("program");
    t.program.dynamic = p.at("dynamic").get<bool>();
    t.program.min = p.at("min").get<long long>();
    t.program.max = p.at("max").get<long long>();
    t.program.exported = p.at("exported").get<long long>();
    t.program.shape = p.at("shape").get<std::string>();
  } else if (t.exported_program) {
    t.program = {t.dynamic_batch, t.batch_min, t.batch_max, t.default_batch, t.exported_shape};
  }
  return t;
}

json wire_value(const WorkloadDescription& d) {
  return {{"model", d.model},
          {"inputs", d.inputs},
          {"input_source", d.input_source},
          {"traits", to_json(d.traits)}};
}

void read_wire(const json& j, WorkloadDescription& d) {
  d.model = j.at("model").get<std::string>();
  d.inputs = j.at("inputs").get<std::string>();
  d.input_source = j.at("input_source").get<std::string>();
  d.traits = workload_traits_from_json(j.at("traits"));
}

json wire_value(const BenchResult& r) { return to_json(r); }

void read_wire(const json& j, BenchResult& r) {
  r = BenchResult{};
  r.environment = environment_from_json(j.at("context"));
  if (!j.contains("comparison")) {
    r.measurement = measurement_from_json(j.at("measurement"));
    return;
  }
  // A head to head run elsewhere (a cluster's node): what the comparison's readers use.
  const json& c = j.at("comparison");
  const auto number = [](const json& v) { return v.is_number() ? v.get<double>() : NAN; };
  Comparison out;
  out.a = measurement_from_json(c.at("a"));
  out.b = measurement_from_json(c.at("b"));
  const json& s = c.at("speedup");
  out.speedup.ratio = number(s.at("ratio"));
  out.speedup.interval.low = number(s.at("ci").at(0));
  out.speedup.interval.high = number(s.at("ci").at(1));
  out.speedup.median = number(s.at("median"));
  out.speedup.rounds = s.at("rounds").get<std::size_t>();
  out.separate_processes = c.at("separate_processes").get<bool>();
  if (const auto l = c.find("round_load"); l != c.end() && l->is_object()) {
    RoundLoad load;
    load.windows = l->at("windows").get<std::size_t>();
    load.busy_windows = l->at("busy_windows").get<std::size_t>();
    load.max_cores = number(l->at("max_cores"));
    out.round_load = load;
  }
  out.verdict = verdict_from_string(c.at("verdict").get<std::string>());
  r.comparison = std::move(out);
}

void read_wire(const json& j, Ending& e) { e = ending_named(j.get<std::string>()); }

json wire_value(const Measurement& m) { return to_json(m); }
void read_wire(const json& j, Measurement& m) { m = measurement_from_json(j); }

json wire_value(const SampleSet& s) { return to_json(s); }
void read_wire(const json& j, SampleSet& s) {
  s = sample_set_from_json(j, SamplingOptions{}.confidence);
}

void to_json(json& j, const RegionTensor& t) {
  j = {{"dtype", t.dtype}, {"shape", t.shape}, {"offset", t.offset}};
}
void from_json(const json& j, RegionTensor& t) {
  t.dtype = j.at("dtype").get<std::string>();
  t.shape = j.at("shape").get<std::vector<std::int64_t>>();
  t.offset = j.at("offset").get<std::int64_t>();
}

json worker_protocol_schema() {
  json schema = {{"protocol", kWorkerProtocolVersion}, {"jobs", json::object()}};
  add_to_schema<DescribeRequest, DescribeReply>(schema);
  add_to_schema<ReferenceRequest, EmptyReply>(schema);
  add_to_schema<MeasureRequest, MeasureReply>(schema);
  add_to_schema<MeasuresRequest, EmptyReply>(schema);
  add_to_schema<SideRequest, SideReady>(schema, "ready");
  add_to_schema<BlockRequest, BlockReply>(schema);
  add_to_schema<FinishRequest, FinishReply>(schema);
  add_to_schema<PythonSideRequest, PythonSideReady>(schema, "ready");
  add_to_schema<PythonBlockRequest, PythonBlockReply>(schema);
  add_to_schema<PythonFinishRequest, PythonFinishReply>(schema);
  add_to_schema<PythonCallRequest, PythonCallReply>(schema);
  // torch.compile's modes, which the Python side mirrors (python/torchperf/compile_modes.py).
  json& modes = schema["compile_modes"] = json::object();
  for (const CompileMode& m : compile_modes())
    modes[m.graph] = {{"mode", m.mode ? json(m.mode) : json(nullptr)},
                      {"cuda_only", m.cuda_only},
                      {"cuda_graphs", m.cuda_graphs},
                      {"trains", m.trains},
                      {"autotunes", m.autotunes},
                      {"dynamic", m.dynamic ? json(m.dynamic) : json(nullptr)},
                      {"varying_only", m.varying_only}};
  // The engines' graphs, which the Python side mirrors (python/torchperf/engine_graphs.py).
  json& engines = schema["engine_graphs"] = json::object();
  for (const EngineGraph& g : engine_graphs())
    engines[g.graph] = {{"engine", g.engine},
                        {"level", g.level ? json(g.level) : json(nullptr)},
                        {"parallel", g.parallel},
                        {"arena", g.arena},
                        {"hint", g.hint ? json(g.hint) : json(nullptr)},
                        {"static_shapes", g.static_shapes}};
  // The error table, which the Python side mirrors (python/torchperf/error_kinds.py).
  json& kinds = schema["error_kinds"] = json::object();
  for (const auto& row : kErrorKinds) kinds[std::string(row.name)] = row.exit_code;
  return schema;
}

}  // namespace torchperf

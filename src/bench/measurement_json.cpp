#include "torchperf/bench/measurement_json.h"

#include <cmath>

#include "torchperf/json_fields.h"

namespace torchperf {
namespace {

using nlohmann::json;

json to_json(const Summary& s) {
  return {{"count", s.count},
          {"mean", nullable(s.mean)},
          {"stddev", nullable(s.stddev)},
          {"cv", nullable(s.cv)},
          {"min", nullable(s.min)},
          {"max", nullable(s.max)},
          {"median", nullable(s.median)},
          {"p90", nullable(s.p90)},
          {"p99", nullable(s.p99)},
          {"median_ci", {nullable(s.median_ci.low), nullable(s.median_ci.high)}},
          {"median_ci_relative", nullable(s.median_ci_relative)}};
}

json to_json(const Warmup& w) {
  return {{"first_call_ms", static_cast<double>(w.first_call.count()) * 1e-6},
          {"iterations", w.iterations},
          {"total_ms", static_cast<double>(w.total.count()) * 1e-6},
          {"settled", w.settled},
          {"settled_iteration_ms", w.settled_iteration_ns * 1e-6}};
}

}  // namespace

json to_json(const Environment& env) {
  json blas = {{"kind", to_string(env.blas.kind)}, {"path", env.blas.path}};
  return {{"torchperf_version", env.torchperf_version},
          {"torchperf_build_type", env.torchperf_build_type},
          {"torchperf_git_commit", env.torchperf_git_commit},
          {"cpu_governor", env.cpu_governor},
          {"load_average_1m", env.load_average_1m},
          {"torch_version", env.torch_version},
          {"torch_build_config", env.torch_build_config},
          {"cpu_model", env.cpu_model},
          {"cpu_isa", env.cpu_isa},
          {"logical_cores", env.logical_cores},
          {"usable_cores", env.usable_cores},
          {"intra_op_threads", env.intra_op_threads},
          {"inter_op_threads", env.inter_op_threads},
          {"blas", blas},
          {"cuda_available", env.cuda_available},
          {"cuda_devices", env.cuda_devices},
          {"gpu_names", env.gpu_names},
          {"gpu_driver", env.gpu_driver},
          {"cudnn_version", env.cudnn_version},
          {"hostname", env.hostname},
          {"kernel", env.kernel},
          {"variables", env.variables},
          {"warnings", env.warnings}};
}

json to_json(const ResolvedConfiguration& config) {
  json knobs = json::object();
  for (const auto& k : config.knobs) {
    json entry = {{"value", k.value}, {"applicable", k.applicable}, {"requested", k.requested}};
    if (!k.reason.empty()) entry["reason"] = k.reason;
    knobs[k.name] = entry;
  }
  return {{"string", config.to_string()}, {"knobs", knobs}, {"notes", config.notes}};
}

json to_json(const Measurement& m) {
  json quality = {{"comparable", m.quality.comparable},
                  {"max_abs_error", nullable(m.quality.max_abs_error)},
                  {"max_rel_error", nullable(m.quality.max_rel_error)},
                  {"cosine", nullable(m.quality.cosine)},
                  {"top1_agreement",
                   m.quality.top1_agreement ? json(*m.quality.top1_agreement) : json(nullptr)},
                  {"nonfinite_values", m.quality.nonfinite_values}};
  if (!m.quality.note.empty()) quality["note"] = m.quality.note;
  return {
      {"model", m.model},
      {"inputs", m.inputs},
      {"input_source", m.input_source},
      {"device", m.device},
      {"batch", m.batch},
      {"configuration", to_json(m.configuration)},
      {"throughput_samples_per_s", nullable(m.throughput_samples_per_s)},
      {"throughput_ci", {nullable(m.throughput_ci.low), nullable(m.throughput_ci.high)}},
      {"latency_ms",
       {{"p50", nullable(m.latency_p50_ms)},
        {"p90", nullable(m.latency_p90_ms)},
        {"p99", nullable(m.latency_p99_ms)}}},
      {"iteration_ns", to_json(m.samples.summary)},
      {"block_iterations", m.samples.block_iterations},
      {"stop_reason", to_string(m.samples.stop)},
      {"stopping_rule_met", m.samples.stop == StopReason::kConfidenceReached},
      {"paired", m.paired},
      {"measured_s", to_seconds(m.samples.measured)},
      {"warmup", to_json(m.samples.warmup)},
      {"setup_ms", m.setup_ms},
      {"memory",
       {{"rss_before_bytes", m.rss_before_bytes},
        {"peak_bytes", m.peak_memory_bytes},
        {"peak_kind", m.peak_memory_kind},
        {"peak_reset", m.peak_memory_reset},
        {"minor_page_faults_per_iteration", m.page_faults_per_iteration}}},
      {"quality", quality},
      {"flops_per_sample", m.flops_per_sample},
      {"achieved_gflops", nullable(m.achieved_gflops)},
      {"samples_ns", m.samples.iteration_ns},
      {"warnings", m.warnings},
      {"valid", m.valid},
      {"invalid_reason", m.invalid_reason},
  };
}

json to_json(const Comparison& c) {
  return {{"a", to_json(c.a)},
          {"b", to_json(c.b)},
          {"speedup",
           {{"median", nullable(c.speedup.median)},
            {"ci", {nullable(c.speedup.median_ci.low), nullable(c.speedup.median_ci.high)}},
            {"rounds", c.speedup.count}}},
          {"stop_reason", to_string(c.stop)},
          {"verdict", c.verdict}};
}

json to_json(const BenchResult& result) {
  json out = {{"schema_version", kSchemaVersion}, {"context", to_json(result.environment)}};
  if (result.comparison) {
    out["kind"] = "comparison";
    out["comparison"] = to_json(*result.comparison);
  } else if (result.measurement) {
    out["kind"] = "measurement";
    out["measurement"] = to_json(*result.measurement);
  }
  out["valid"] = result.valid();
  return out;
}

}  // namespace torchperf

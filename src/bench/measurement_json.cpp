#include "torchperf/bench/measurement_json.h"

#include <cmath>

#include "torchperf/config/knob.h"
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

Summary summary_from_json(const json& j) {
  Summary s;
  s.count = j.at("count").get<std::size_t>();
  s.mean = number_or_nan(j.at("mean"));
  s.stddev = number_or_nan(j.at("stddev"));
  s.cv = number_or_nan(j.at("cv"));
  s.min = number_or_nan(j.at("min"));
  s.max = number_or_nan(j.at("max"));
  s.median = number_or_nan(j.at("median"));
  s.p90 = number_or_nan(j.at("p90"));
  s.p99 = number_or_nan(j.at("p99"));
  s.median_ci = {number_or_nan(j.at("median_ci").at(0)), number_or_nan(j.at("median_ci").at(1))};
  s.median_ci_relative = number_or_nan(j.at("median_ci_relative"));
  return s;
}

Nanoseconds from_ms(double ms) { return Nanoseconds(static_cast<std::int64_t>(std::llround(ms * 1e6))); }

json to_json(const Warmup& w) {
  return {{"first_call_ms", static_cast<double>(w.first_call.count()) * 1e-6},
          {"iterations", w.iterations},
          {"total_ms", static_cast<double>(w.total.count()) * 1e-6},
          {"settled", w.settled},
          {"settled_iteration_ms", w.settled_iteration_ns * 1e-6}};
}

Warmup warmup_from_json(const json& j) {
  Warmup w;
  w.first_call = from_ms(j.at("first_call_ms").get<double>());
  w.iterations = j.at("iterations").get<std::size_t>();
  w.total = from_ms(j.at("total_ms").get<double>());
  w.settled = j.at("settled").get<bool>();
  w.settled_iteration_ns = j.at("settled_iteration_ms").get<double>() * 1e6;
  return w;
}

StopReason stop_reason_from_string(const std::string& name) {
  for (StopReason r : {StopReason::kConfidenceReached, StopReason::kTimeBudgetSpent,
                       StopReason::kSampleLimit, StopReason::kCallOverBudget,
                       StopReason::kBehindLeader, StopReason::kDecided})
    if (to_string(r) == name) return r;
  throw json::other_error::create(501, "unknown stop_reason '" + name + "'", nullptr);
}

}  // namespace

json to_json(const SampleSet& s) {
  return {{"warmup", to_json(s.warmup)},
          {"block_iterations", s.block_iterations},
          {"samples_ns", s.iteration_ns},
          {"measured_s", to_seconds(s.measured)},
          {"stop_reason", to_string(s.stop)}};
}

SampleSet sample_set_from_json(const json& j, double confidence) {
  SampleSet s;
  s.warmup = warmup_from_json(j.at("warmup"));
  s.block_iterations = j.at("block_iterations").get<std::size_t>();
  s.iteration_ns = j.at("samples_ns").get<std::vector<double>>();
  s.measured = std::chrono::duration_cast<Nanoseconds>(
      std::chrono::duration<double>(j.at("measured_s").get<double>()));
  s.stop = stop_reason_from_string(j.at("stop_reason").get<std::string>());
  s.summary = summarize(s.iteration_ns, confidence);
  return s;
}

ResolvedConfiguration resolved_configuration_from_json(const json& j) {
  ResolvedConfiguration c;
  for (const auto& [name, entry] : j.at("knobs").items()) {
    ResolvedKnob k;
    k.name = name;
    k.value = entry.at("value").get<std::string>();
    k.applicable = entry.at("applicable").get<bool>();
    k.requested = entry.at("requested").get<bool>();
    k.reason = entry.value("reason", "");
    k.baseline = entry.value("baseline", false);
    c.knobs.push_back(k);
  }
  // JSON objects come back sorted by name: registry order is what every reader expects.
  std::vector<ResolvedKnob> ordered;
  for (const auto& knob : knob_registry())
    for (const auto& k : c.knobs)
      if (k.name == knob.name) ordered.push_back(k);
  c.knobs = ordered;
  c.notes = j.at("notes").get<std::vector<std::string>>();
  return c;
}

Measurement measurement_from_json(const json& j) {
  Measurement m;
  m.model = j.at("model").get<std::string>();
  m.inputs = j.at("inputs").get<std::string>();
  m.input_source = j.at("input_source").get<std::string>();
  m.device = j.at("device").get<std::string>();
  m.batch = j.at("batch").get<std::int64_t>();
  m.configuration = resolved_configuration_from_json(j.at("configuration"));
  m.samples.warmup = warmup_from_json(j.at("warmup"));
  m.samples.block_iterations = j.at("block_iterations").get<std::size_t>();
  m.samples.iteration_ns = j.at("samples_ns").get<std::vector<double>>();
  m.samples.measured = std::chrono::duration_cast<Nanoseconds>(
      std::chrono::duration<double>(j.at("measured_s").get<double>()));
  m.samples.stop = stop_reason_from_string(j.at("stop_reason").get<std::string>());
  m.samples.summary = summary_from_json(j.at("iteration_ns"));
  m.paired = j.at("paired").get<bool>();
  m.throughput_samples_per_s = number_or_nan(j.at("throughput_samples_per_s"));
  m.throughput_ci = {number_or_nan(j.at("throughput_ci").at(0)),
                     number_or_nan(j.at("throughput_ci").at(1))};
  const json& latency = j.at("latency_ms");
  m.latency_p50_ms = number_or_nan(latency.at("p50"));
  m.latency_p90_ms = number_or_nan(latency.at("p90"));
  m.latency_p99_ms = number_or_nan(latency.at("p99"));
  m.setup_ms = j.at("setup_ms").get<double>();
  if (j.contains("compile") && j.at("compile").is_object()) {  // a torch.export program's
    const json& c = j.at("compile");
    m.compile_s = c.at("compile_s").get<double>();
    m.compile_cache_hit = c.at("cache_hit").get<bool>();
    m.package = c.value("package", "");
    m.graph_breaks = c.value("graph_breaks", std::int64_t{0});
    if (c.contains("graph_break_reasons"))
      m.graph_break_reasons = c.at("graph_break_reasons").get<std::vector<std::string>>();
  }
  if (j.contains("stream") && j.at("stream").is_object()) {
    const json& s = j.at("stream");
    StreamFigures f;
    f.dims = s.at("dims").get<std::string>();
    f.batches = s.at("batches").get<std::int64_t>();
    f.samples = s.at("samples").get<std::int64_t>();
    f.useful_tokens = s.at("useful_tokens").get<std::int64_t>();
    f.padded_tokens = s.at("padded_tokens").get<std::int64_t>();
    f.padding_share = s.at("padding_share").get<double>();
    f.timed_batches = s.value("timed_batches", f.batches);
    f.pass_scale = s.value("pass_scale", 1.0);
    f.tokens_per_s = number_or_nan(s.at("tokens_per_s"));
    f.warm_s = s.value("warm_s", -1.0);
    f.warm_graphs = s.value("warm_graphs", std::int64_t{0});
    if (s.contains("padding_check") && s.at("padding_check").is_object()) {
      const json& c = s.at("padding_check");
      f.padding_check_lengths = c.at("lengths").get<std::vector<std::int64_t>>();
      f.padding_check.comparable = c.at("comparable").get<bool>();
      f.padding_check.cosine = number_or_nan(c.at("cosine"));
      f.padding_check.max_abs_error = number_or_nan(c.at("max_abs_error"));
    }
    m.stream = f;
  }
  if (j.contains("cuda_graphs") && j.at("cuda_graphs").is_object())
    m.capture_s = number_or_nan(j.at("cuda_graphs").value("capture_s", json(nullptr)));
  const json& memory = j.at("memory");
  m.rss_before_bytes = memory.at("rss_before_bytes").get<std::int64_t>();
  m.peak_memory_bytes = memory.at("peak_bytes").get<std::int64_t>();
  m.peak_memory_kind = memory.at("peak_kind").get<std::string>();
  m.peak_memory_reset = memory.at("peak_reset").get<bool>();
  m.page_faults_per_iteration = memory.at("minor_page_faults_per_iteration").get<double>();
  const json& q = j.at("quality");
  m.quality.comparable = q.at("comparable").get<bool>();
  m.quality.note = q.value("note", "");
  m.quality.max_abs_error = number_or_nan(q.at("max_abs_error"));
  m.quality.max_rel_error = number_or_nan(q.at("max_rel_error"));
  m.quality.cosine = number_or_nan(q.at("cosine"));
  if (!q.at("top1_agreement").is_null()) m.quality.top1_agreement = q.at("top1_agreement").get<double>();
  m.quality.nonfinite_values = q.at("nonfinite_values").get<std::int64_t>();
  m.flops_per_sample = j.at("flops_per_sample").get<std::uint64_t>();
  m.achieved_gflops = number_or_nan(j.at("achieved_gflops"));
  if (j.contains("process")) m.process = j.at("process").get<std::map<std::string, std::string>>();
  m.warnings = j.at("warnings").get<std::vector<std::string>>();
  m.advice = j.value("advice", std::vector<std::string>{});
  m.valid = j.at("valid").get<bool>();
  m.invalid_reason = j.at("invalid_reason").get<std::string>();
  m.inconclusive_reason = j.value("inconclusive_reason", "");
  return m;
}

json to_json(const Environment& env) {
  const TorchBuild& b = env.torch_build;
  const json build = {{"blas", b.blas},           {"blas_version", b.blas_version},
                      {"onednn_version", b.onednn_version}, {"openmp", b.openmp},
                      {"cpu_capability", b.cpu_capability}, {"compiler", b.compiler},
                      {"cuda", b.cuda},           {"summary", summarize(b)}};
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
          {"torch_build", build},
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

Environment environment_from_json(const json& j) {
  Environment env;
  env.torchperf_version = j.at("torchperf_version").get<std::string>();
  env.torchperf_build_type = j.at("torchperf_build_type").get<std::string>();
  env.torchperf_git_commit = j.at("torchperf_git_commit").get<std::string>();
  env.cpu_governor = j.at("cpu_governor").get<std::string>();
  env.load_average_1m = j.at("load_average_1m").get<double>();
  env.torch_version = j.at("torch_version").get<std::string>();
  env.torch_build_config = j.at("torch_build_config").get<std::string>();
  env.cpu_model = j.at("cpu_model").get<std::string>();
  env.cpu_isa = j.at("cpu_isa").get<std::vector<std::string>>();
  env.logical_cores = j.at("logical_cores").get<int>();
  env.usable_cores = j.at("usable_cores").get<int>();
  env.intra_op_threads = j.at("intra_op_threads").get<int>();
  env.inter_op_threads = j.at("inter_op_threads").get<int>();
  // Parsed again from the text LibTorch gave: records written before torch_build existed too.
  env.torch_build = parse_torch_build(env.torch_build_config);
  env.cuda_available = j.at("cuda_available").get<bool>();
  env.cuda_devices = j.at("cuda_devices").get<int>();
  env.gpu_names = j.at("gpu_names").get<std::vector<std::string>>();
  env.gpu_driver = j.at("gpu_driver").get<std::string>();
  env.cudnn_version = j.at("cudnn_version").get<long>();
  env.hostname = j.at("hostname").get<std::string>();
  env.kernel = j.at("kernel").get<std::string>();
  env.variables = j.at("variables").get<std::map<std::string, std::string>>();
  env.warnings = j.at("warnings").get<std::vector<std::string>>();
  return env;
}

json to_json(const ResolvedConfiguration& config) {
  json knobs = json::object();
  for (const auto& k : config.knobs) {
    json entry = {{"value", k.value},
                  {"applicable", k.applicable},
                  {"requested", k.requested},
                  {"baseline", k.baseline}};
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
      {"compile", m.compile_s < 0 ? json(nullptr)
                                  : json{{"compile_s", m.compile_s},
                                         {"cache_hit", m.compile_cache_hit},
                                         {"package", m.package},
                                         {"graph_breaks", m.graph_breaks},
                                         {"graph_break_reasons", m.graph_break_reasons}}},
      {"cuda_graphs", m.capture_s < 0 ? json(nullptr) : json{{"capture_s", m.capture_s}}},
      {"stream", !m.stream ? json(nullptr)
                           : json{{"dims", m.stream->dims},
                                  {"batches", m.stream->batches},
                                  {"samples", m.stream->samples},
                                  {"useful_tokens", m.stream->useful_tokens},
                                  {"padded_tokens", m.stream->padded_tokens},
                                  {"padding_share", m.stream->padding_share},
                                  {"timed_batches", m.stream->timed_batches},
                                  {"pass_scale", m.stream->pass_scale},
                                  {"tokens_per_s", nullable(m.stream->tokens_per_s)},
                                  {"warm_s", m.stream->warm_s},
                                  {"warm_graphs", m.stream->warm_graphs},
                                  {"padding_check",
                                   m.stream->padding_check_lengths.empty()
                                       ? json(nullptr)
                                       : json{{"lengths", m.stream->padding_check_lengths},
                                              {"comparable", m.stream->padding_check.comparable},
                                              {"cosine", nullable(m.stream->padding_check.cosine)},
                                              {"max_abs_error",
                                               nullable(m.stream->padding_check.max_abs_error)}}}}},
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
      {"process", m.process},
      {"warnings", m.warnings},
      {"advice", m.advice},
      {"valid", m.valid},
      {"invalid_reason", m.invalid_reason},
      {"inconclusive_reason", m.inconclusive_reason},
  };
}

json to_json(const Comparison& c) {
  return {{"a", to_json(c.a)},
          {"b", to_json(c.b)},
          {"speedup",
           {{"ratio", nullable(c.speedup.ratio)},
            {"ci", {nullable(c.speedup.interval.low), nullable(c.speedup.interval.high)}},
            {"estimator", "geometric mean of per-round ratios; Student t interval on their logs"},
            {"median", nullable(c.speedup.median)},
            {"rounds", c.speedup.rounds}}},
          {"separate_processes", c.separate_processes},
          {"round_load", c.round_load ? json{{"windows", c.round_load->windows},
                                             {"busy_windows", c.round_load->busy_windows},
                                             {"max_cores", c.round_load->max_cores}}
                                      : json(nullptr)},
          {"stop_reason", to_string(c.stop)},
          {"verdict", to_string(c.verdict)}};
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
  out["invalid_reason"] = result.invalid_reason();
  return out;
}

}  // namespace torchperf

#include "torchperf/generate/generation_point.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "torchperf/error.h"
#include "torchperf/json_fields.h"
#include "torchperf/models/python_side.h"

namespace torchperf {

namespace {

nlohmann::json calls_json(const std::vector<GenerationCall>& calls) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : calls) out.push_back(c.to_json());
  return out;
}

nlohmann::json settings_json(const GenerationSettings& settings) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : settings) out[k] = v;
  return out;
}

LogitErrors logit_errors_from(const nlohmann::json& j) {
  LogitErrors e;
  e.max_abs_error = j.at("max_abs_error").get<double>();
  e.max_rel_error = j.at("max_rel_error").get<double>();
  e.cosine = j.at("cosine").get<double>();
  e.top1 = j.at("top1_agreement").get<double>();
  e.nonfinite_values = j.at("nonfinite_values").get<std::int64_t>();
  return e;
}

nlohmann::json to_json(const LogitErrors& e) {
  return {{"max_abs_error", e.max_abs_error}, {"max_rel_error", e.max_rel_error},
          {"cosine", e.cosine}, {"top1_agreement", e.top1},
          {"nonfinite_values", e.nonfinite_values}};
}

nlohmann::json to_json(const Summary& s) {
  return {{"count", s.count}, {"median", s.median}, {"mean", s.mean}, {"min", s.min},
          {"max", s.max}, {"p90", s.p90}, {"p99", s.p99}, {"cv", s.cv},
          {"median_ci", {nullable(s.median_ci.low), nullable(s.median_ci.high)}}};
}

Summary summary_from(const nlohmann::json& j) {
  Summary s;
  s.count = j.at("count").get<std::size_t>();
  s.median = j.at("median").get<double>();
  s.mean = j.at("mean").get<double>();
  s.min = j.at("min").get<double>();
  s.max = j.at("max").get<double>();
  s.p90 = j.at("p90").get<double>();
  s.p99 = j.at("p99").get<double>();
  s.cv = j.at("cv").get<double>();
  // A CI too short to exist was written as null (non-finite): read back as NaN.
  const auto& ci = j.at("median_ci");
  s.median_ci.low = number_or_nan(ci.at(0));
  s.median_ci.high = number_or_nan(ci.at(1));
  return s;
}

GenerationGuard guard_from(const nlohmann::json& j) {
  GenerationGuard g;
  g.token_agreement = j.at("token_agreement").get<double>();
  g.agreed_steps = j.at("agreed_steps").get<std::int64_t>();
  g.steps_compared = j.at("steps_compared").get<std::int64_t>();
  g.prefill = logit_errors_from(j.at("prefill"));
  if (j.contains("decode_step")) g.decode_step = logit_errors_from(j.at("decode_step"));
  return g;
}

nlohmann::json to_json(const GenerationGuard& g) {
  nlohmann::json j = {{"token_agreement", g.token_agreement},
                      {"agreed_steps", g.agreed_steps},
                      {"steps_compared", g.steps_compared},
                      {"prefill", to_json(g.prefill)}};
  if (g.decode_step) j["decode_step"] = to_json(*g.decode_step);
  return j;
}

}  // namespace

GenerationFigures read_generation_answer(const nlohmann::json& answer) {
  try {
    GenerationFigures f;
    std::vector<double> decode_rate, ttft, tpot, itl, e2e;
    for (const auto& call : answer.at("calls")) {
      const double rows = call.at("batch").get<double>();
      const double tokens = call.at("new_tokens").get<double>();
      const double decode_s = call.at("decode_s").get<double>();
      ttft.push_back(call.at("ttft_s").get<double>());
      e2e.push_back(rows * tokens / call.at("end_to_end_s").get<double>());
      // One token is the prefill's: the decode makes the rest.
      if (tokens > 1 && decode_s > 0) {
        decode_rate.push_back(rows * (tokens - 1) / decode_s);
        tpot.push_back(decode_s / (tokens - 1));
      }
      for (const auto& step : call.at("steps_s")) itl.push_back(step.get<double>());
    }
    f.decode_tokens_per_s = summarize(decode_rate);
    f.ttft_s = summarize(ttft);
    f.tpot_s = summarize(tpot);
    f.itl_s = summarize(itl);
    f.end_to_end_tokens_per_s = summarize(e2e);
    f.warmup_s = answer.at("warmup_s").get<std::vector<double>>();
    f.load_s = answer.at("load_s").get<double>();
    const auto& memory = answer.at("memory");
    f.weights_bytes = memory.at("weights_bytes").get<std::int64_t>();
    f.kv_cache_bytes = memory.at("kv_cache_bytes").get<std::int64_t>();
    f.peak_bytes = memory.at("peak_bytes").get<std::int64_t>();
    f.peak_counts = memory.at("peak_counts").get<std::string>();
    const auto& bytes = answer.at("step_bytes");
    f.step_weight_bytes = bytes.at("weights").get<double>();
    f.step_kv_bytes = bytes.at("kv_cache").get<double>();
    if (f.tpot_s.count > 0 && f.tpot_s.median > 0)
      f.achieved_gb_per_s = (f.step_weight_bytes + f.step_kv_bytes) / f.tpot_s.median / 1e9;
    if (answer.contains("guard")) f.guard = guard_from(answer.at("guard"));
    f.code = answer.at("code").get<std::string>();
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw RuntimeFailure(std::string("a generation point's answer lacks a field: ") + e.what());
  }
}

double GenerationFigures::setup_s() const {
  const double first = warmup_s.empty() ? 0 : warmup_s.front() - warmup_s.back();
  return std::max(0.0, first) + load_s;
}

std::string GenerationPoint::label() const {
  return "batch=" + std::to_string(batch) + ";" + settings_text(settings);
}

nlohmann::json point_request(const GenerationWorkload& workload, const GenerationSettings& settings,
                             std::int64_t batch, const std::string& reference) {
  nlohmann::json r = {
      {"job", "point"},
      {"source", workload.source.to_json()},
      {"device", workload.device},
      {"configuration", settings_json(settings)},
      {"warmup_calls", calls_json(draw_calls(workload, batch, workload.warmup_calls, "warmup"))},
      {"calls", calls_json(draw_calls(workload, batch, workload.timed_calls, "timed"))}};
  if (!workload.cache_dir.empty()) r["cache_dir"] = workload.cache_dir;
  if (!reference.empty()) {
    r["reference"] = reference;
    r["guard"] = guard_call(workload).to_json();
  }
  return r;
}

nlohmann::json reference_request(const GenerationWorkload& workload, const std::string& out) {
  return {{"job", "reference"},
          {"source", workload.source.to_json()},
          {"device", workload.device},
          {"out", out},
          {"guard", guard_call(workload).to_json()},
          // The calls too: prompts past the model's positions are refused before any point.
          {"calls", calls_json(draw_calls(workload, 1, 1, "timed"))}};
}

namespace {

nlohmann::json run_request(const nlohmann::json& request, const std::string& request_path,
                           const std::string& log_path, const PointLimits& limits,
                           const std::string& what) {
  std::filesystem::create_directories(std::filesystem::path(request_path).parent_path());
  std::filesystem::create_directories(std::filesystem::path(log_path).parent_path());
  std::ofstream(request_path) << request.dump(1) << "\n";
  PythonStep step;
  step.module = "torchperf.generation";
  step.args = {request_path};
  step.limits = within(limits.timeout_s, limits.memory_cap_bytes);
  if (limits.stop_requested)
    step.limits.keep_going = [stop = limits.stop_requested](double) { return !stop(); };
  step.what = what;
  step.log_path = log_path;
  return run_python_step(step);
}

}  // namespace

nlohmann::json run_generation_reference(const GenerationWorkload& workload, const std::string& out,
                                        const std::string& log_dir, const PointLimits& limits) {
  const auto request = reference_request(workload, out);
  return run_request(request, log_dir + "/reference.json", log_dir + "/reference.log", limits,
                     "generating the fp32 eager reference of '" + workload.source.text() + "'");
}

std::optional<std::string> judge(const GenerationGuard& figures, const AccuracyGuard& guard) {
  const auto check = [&](const LogitErrors& e, const char* which) -> std::optional<std::string> {
    PointMetrics m;
    m.cosine = e.cosine;
    m.max_abs_error = e.max_abs_error;
    m.max_rel_error = e.max_rel_error;
    m.top1 = e.top1;
    if (e.nonfinite_values > 0) {
      m.valid = false;
      m.invalid_reason = fmt::format("{} NaN or Inf logits", e.nonfinite_values);
    }
    const auto failed = guard.check(m);
    if (failed) return std::string(which) + "'s logits: " + *failed;
    return std::nullopt;
  };
  if (auto failed = check(figures.prefill, "the prefill")) return failed;
  if (figures.decode_step)
    if (auto failed = check(*figures.decode_step, "the decode step")) return failed;
  return std::nullopt;
}

GenerationPoint run_generation_point(const GenerationWorkload& workload,
                                     const GenerationSettings& settings, std::int64_t batch,
                                     const std::string& reference, const std::string& log_path,
                                     const PointLimits& limits, const AccuracyGuard& guard) {
  GenerationPoint point;
  point.settings = settings;
  point.batch = batch;
  point.log_path = log_path;
  const auto started = std::chrono::steady_clock::now();
  try {
    const auto answer =
        run_request(point_request(workload, settings, batch, reference),
                    std::filesystem::path(log_path).replace_extension(".json").string(), log_path,
                    limits, "generating with " + point.label());
    point.figures = read_generation_answer(answer);
    point.measured = true;
    if (point.figures.guard) point.guard_failure = judge(*point.figures.guard, guard);
  } catch (const Interrupted&) {
    throw;
  } catch (const Error& e) {
    point.error = e.what();
    point.error_kind = name_of(e.kind());
  }
  point.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return point;
}

nlohmann::json to_json(const GenerationPoint& p) {
  nlohmann::json j = {{"settings", settings_json(p.settings)}, {"batch", p.batch},
                      {"measured", p.measured}, {"wall_s", p.wall_s}, {"log", p.log_path}};
  if (!p.measured) {
    j["error"] = p.error;
    j["error_kind"] = p.error_kind;
    return j;
  }
  const auto& f = p.figures;
  j["decode_tokens_per_s"] = to_json(f.decode_tokens_per_s);
  j["ttft_s"] = to_json(f.ttft_s);
  j["tpot_s"] = to_json(f.tpot_s);
  j["itl_s"] = to_json(f.itl_s);
  j["end_to_end_tokens_per_s"] = to_json(f.end_to_end_tokens_per_s);
  j["warmup_s"] = f.warmup_s;
  j["load_s"] = f.load_s;
  j["memory"] = {{"weights_bytes", f.weights_bytes}, {"kv_cache_bytes", f.kv_cache_bytes},
                 {"peak_bytes", f.peak_bytes}, {"peak_counts", f.peak_counts}};
  j["step_bytes"] = {{"weights", f.step_weight_bytes}, {"kv_cache", f.step_kv_bytes}};
  j["achieved_gb_per_s"] = f.achieved_gb_per_s;
  if (f.guard) j["guard"] = to_json(*f.guard);
  j["code"] = f.code;
  j["valid"] = p.valid();
  if (p.guard_failure) j["guard_failure"] = *p.guard_failure;
  return j;
}

GenerationPoint generation_point_from_json(const nlohmann::json& j) {
  GenerationPoint p;
  for (const auto& [k, v] : j.at("settings").items()) p.settings[k] = v.get<std::string>();
  p.batch = j.at("batch").get<std::int64_t>();
  p.measured = j.at("measured").get<bool>();
  p.wall_s = j.at("wall_s").get<double>();
  p.log_path = j.value("log", "");
  if (!p.measured) {
    p.error = j.at("error").get<std::string>();
    p.error_kind = j.at("error_kind").get<std::string>();
    return p;
  }
  auto& f = p.figures;
  f.decode_tokens_per_s = summary_from(j.at("decode_tokens_per_s"));
  f.ttft_s = summary_from(j.at("ttft_s"));
  f.tpot_s = summary_from(j.at("tpot_s"));
  f.itl_s = summary_from(j.at("itl_s"));
  f.end_to_end_tokens_per_s = summary_from(j.at("end_to_end_tokens_per_s"));
  f.warmup_s = j.at("warmup_s").get<std::vector<double>>();
  f.load_s = j.at("load_s").get<double>();
  const auto& m = j.at("memory");
  f.weights_bytes = m.at("weights_bytes").get<std::int64_t>();
  f.kv_cache_bytes = m.at("kv_cache_bytes").get<std::int64_t>();
  f.peak_bytes = m.at("peak_bytes").get<std::int64_t>();
  f.peak_counts = m.at("peak_counts").get<std::string>();
  f.step_weight_bytes = j.at("step_bytes").at("weights").get<double>();
  f.step_kv_bytes = j.at("step_bytes").at("kv_cache").get<double>();
  f.achieved_gb_per_s = j.at("achieved_gb_per_s").get<double>();
  if (j.contains("guard")) f.guard = guard_from(j.at("guard"));
  f.code = j.value("code", "");  // a journal from before points carried their code: none
  if (j.contains("guard_failure")) p.guard_failure = j.at("guard_failure").get<std::string>();
  return p;
}

}  // namespace torchperf

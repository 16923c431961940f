#include "torchperf/report/table_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "torchperf/runtime/runtime.h"

namespace torchperf {
namespace {

std::string row(const std::string& label, const std::string& value) {
  return fmt::format("  {:<22} {}\n", label, value);
}

std::string percent(double fraction) {
  return std::isnan(fraction) ? "n/a" : fmt::format("{:.2f}%", fraction * 100);
}

// "(95% CI low – high)", or why there is none.
std::string interval(const Interval& ci, int decimals) {
  if (std::isnan(ci.low)) return "(95% CI n/a: fewer than 6 samples)";
  return fmt::format("(95% CI {:.{}f} – {:.{}f})", ci.low, decimals, ci.high, decimals);
}

std::string quality_line(const OutputQuality& q) {
  if (!q.comparable) return "not comparable: " + q.note;
  std::string s = std::isfinite(q.cosine) ? fmt::format("cosine {:.6f}", q.cosine) : "cosine n/a";
  s += fmt::format(", max abs err {:.3g}, max rel err {:.3g}", q.max_abs_error, q.max_rel_error);
  if (q.top1_agreement) s += fmt::format(", top-1 agreement {:.1f}%", *q.top1_agreement * 100);
  if (q.nonfinite_values > 0) s += fmt::format(", {} NaN/Inf values", q.nonfinite_values);
  return s;
}

std::string knob_lines(const ResolvedConfiguration& config) {
  // The configuration's own string: worker knobs appear only when asked for.
  std::string not_applicable;
  for (const auto& k : config.knobs)
    if (!k.applicable)
      not_applicable += fmt::format("{}{}", not_applicable.empty() ? "" : ", ", k.name);
  std::string out = row("configuration", config.to_string());
  if (!not_applicable.empty()) out += row("not applicable", not_applicable);
  for (const auto& note : config.notes) out += row("note", note);
  return out;
}

// What a measurement's compile was: torch.compile's first call, an engine's conversion (cached on
// disk) with its session and first call, or an AOTInductor package.
std::string compile_text(const Measurement& m) {
  // A configuration read from an older record has no runtime knob: C++ then.
  const Runtime& runtime = runtime_of_key(m.configuration.to_string());
  if (runtime.worker() != RuntimeWorker::kPython)
    return fmt::format("AOTInductor package {}: {:.1f} s to compile{}", m.package, m.compile_s,
                       m.compile_cache_hit ? ", from the cache (paid 0 s now)" : ", compiled now");
  const bool engine =
      std::any_of(m.configuration.knobs.begin(), m.configuration.knobs.end(),
                  [](const ResolvedKnob& k) { return k.name == "graph" && engine_graph(k.value); });
  // runtime=python's int8 quantizes (and calibrates) in the worker before the compile.
  std::string precision, graph;
  for (const auto& k : m.configuration.knobs) {
    if (k.name == "precision" && k.value.rfind("int8-", 0) == 0) precision = k.value;
    if (k.name == "graph") graph = k.value;
  }
  const bool quantized = !precision.empty();
  if (quantized && !runtime.compiles(graph))
    return fmt::format("{} quantization: {:.1f} s (in setup, apart from the timed calls)",
                       precision, m.compile_s);
  const char* reused = engine ? "; the conversion read from the cache"
                              : "; its graph an earlier point of this worker compiled";
  return fmt::format("{}: {:.1f} s, {} (in setup, apart from the timed calls){}",
                     engine      ? "conversion to " + runtime.label() +
                                      (quantized ? " and its " + precision + " quantization" : "")
                     : quantized ? precision + " quantization and torch.compile"
                                 : std::string("torch.compile"),
                     m.compile_s, engine ? "with its session and first call" : "the first call",
                     m.compile_cache_hit ? reused : "");
}

}  // namespace

std::string format_bytes(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", bytes);
}

std::string format_environment(const Environment& env) {
  std::string out = "environment\n";
  out += row("torchperf", env.torchperf_version + " (" + env.torchperf_build_type + ", " +
                              env.torchperf_git_commit + ")");
  out += row("LibTorch", env.torch_version);
  std::string isa;
  for (const auto& f : env.cpu_isa) isa += (isa.empty() ? "" : " ") + f;
  out += row("CPU", fmt::format("{} [{}]", env.cpu_model.empty() ? "unknown" : env.cpu_model, isa));
  out += row("cores / threads",
             fmt::format("{} usable of {}; intra-op {}, inter-op {}", env.usable_cores,
                         env.logical_cores, env.intra_op_threads, env.inter_op_threads));
  out += row("LibTorch build", summarize(env.torch_build) +
                                   (env.torch_build.compiler.empty() ? "" : "; " + env.torch_build.compiler));
  if (env.cuda_available) {
    std::string gpus;
    for (const auto& g : env.gpu_names) gpus += (gpus.empty() ? "" : ", ") + g;
    out += row("CUDA",
               fmt::format("{} device(s) {}; cuDNN {}", env.cuda_devices, gpus, env.cudnn_version));
  } else {
    out += row("CUDA", "not available");
  }
  for (const auto& [k, v] : env.variables) out += row(k, v);
  return out;
}

std::string format_measurement(const Measurement& m) {
  const Summary& s = m.samples.summary;
  std::string out = fmt::format("measurement  {}  inputs {}  on {}\n", m.model, m.inputs, m.device);
  out += knob_lines(m.configuration);
  out += row("throughput", fmt::format("{:.2f} samples/s  {}", m.throughput_samples_per_s,
                                       interval(m.throughput_ci, 2)));
  if (m.stream)
    out += row("stream", fmt::format("{}: {:.0f} useful tokens/s; padding {} of the stream's {} "
                                     "tokens in {} batches, timed on {} of them drawn across its "
                                     "padded sizes",
                                     m.stream->dims, m.stream->tokens_per_s,
                                     percent(m.stream->padding_share), m.stream->padded_tokens,
                                     m.stream->batches, m.stream->timed_batches));
  if (m.stream && m.stream->warm_s >= 0)
    out += row("stream warm-up",
               fmt::format("{:.2f} s for the first pass over the timed batches' shapes{} (before timing)",
                           m.stream->warm_s,
                           m.stream->warm_graphs > 0
                               ? fmt::format(", torch.compile compiling {} graph(s)",
                                             m.stream->warm_graphs)
                               : ""));
  if (m.stream && !m.stream->padding_check_lengths.empty()) {
    std::string lengths;
    for (const auto l : m.stream->padding_check_lengths)
      lengths += (lengths.empty() ? "" : ", ") + std::to_string(l);
    out += row("padding check",
               m.stream->padding_check.comparable
                   ? fmt::format("lengths {}: cosine {:.6f}, max abs err {:.3g} padded in its "
                                 "batch against alone",
                                 lengths, m.stream->padding_check.cosine,
                                 m.stream->padding_check.max_abs_error)
                   : "lengths " + lengths + ": not comparable (" + m.stream->padding_check.note + ")");
  }
  out += row(m.stream ? "latency per pass" : "latency per call",
             fmt::format("p50 {:.3f} ms  p90 {:.3f} ms  p99 {:.3f} ms", m.latency_p50_ms,
                         m.latency_p90_ms, m.latency_p99_ms));
  out += row("median CI / CV",
             fmt::format("±{}  /  {}", percent(s.median_ci_relative), percent(s.cv)));
  out += row("samples", fmt::format("{} blocks of {} call(s) in {:.2f} s; {} {}", s.count,
                                    m.samples.block_iterations, to_seconds(m.samples.measured),
                                    m.paired ? "the ratio's stopping rule" : "stopping rule",
                                    m.samples.stop == StopReason::kConfidenceReached
                                        ? "met"
                                        : "NOT met (" + to_string(m.samples.stop) + ")"));
  const auto& w = m.samples.warmup;
  out += row("cold start / warm-up",
             fmt::format("first call {:.2f} ms; warm-up {} calls, {:.1f} ms, {}",
                         w.first_call.count() * 1e-6, w.iterations, w.total.count() * 1e-6,
                         w.settled ? "settled" : "NOT settled"));
  out += row("setup", fmt::format("{:.1f} ms (load and one-time transforms)", m.setup_ms));
  if (m.compile_s >= 0) out += row("compile", compile_text(m));
  if (m.capture_s >= 0)
    out += row("CUDA graphs", fmt::format("captured in {:.2f} s (warm-up calls included, apart "
                                          "from the timed calls)",
                                          m.capture_s));
  out += row("memory",
             fmt::format("peak {} {} (RSS before load {}); {:.1f} minor page faults per call",
                         m.peak_memory_kind == "process-rss" ? "RSS" : "CUDA allocated",
                         format_bytes(m.peak_memory_bytes), format_bytes(m.rss_before_bytes),
                         m.page_faults_per_iteration));
  // Worker knobs away from their baseline, as the process that ran them confirmed them.
  for (const auto& [knob, seen] : m.process) {
    bool at_baseline = true;
    for (const auto& k : m.configuration.knobs)
      if (k.name == knob) at_baseline = k.baseline;
    if (!at_baseline) out += row("process: " + knob, seen);
  }
  out += row("vs fp32 reference", quality_line(m.quality));
  if (m.flops_per_sample > 0)
    out += row("compute",
               fmt::format("{:.3f} GFLOP per sample; {:.1f} GFLOP/s achieved",
                           static_cast<double>(m.flops_per_sample) / 1e9, m.achieved_gflops));
  else
    out += row("compute", "no FLOP estimate (no operator with a LibTorch FLOP formula ran)");
  for (const auto& warning : m.warnings) out += "  warning: " + warning + "\n";
  for (const auto& advice : m.advice) out += "  advice: " + advice + "\n";
  if (!m.valid) out += "  INVALID: " + m.invalid_reason + "\n";
  if (!m.inconclusive_reason.empty()) out += "  inconclusive: " + m.inconclusive_reason + "\n";
  return out;
}

std::string format_comparison(const Comparison& c) {
  std::string out = "A  " + format_measurement(c.a) + "\nB  " + format_measurement(c.b) + "\n";
  const std::string verdict =
      c.verdict == Verdict::kIndistinguishable ? "indistinguishable from B (the CI includes 1)"
      : c.verdict == Verdict::kUndetermined    ? "undetermined (too few rounds; raise --time)"
                                               : to_string(c.verdict);
  out += fmt::format(
      "A vs B: {:.3f}x samples/s {} over {} interleaved rounds (geometric mean; 95% CI, Student t "
      "on the log ratios){}; A is {}\n",
      c.speedup.ratio, interval(c.speedup.interval, 3), c.speedup.rounds,
      c.separate_processes ? ", each side in its own worker process" : "", verdict);
  if (c.stop != StopReason::kConfidenceReached && c.stop != StopReason::kDecided)
    out += fmt::format(
        "  warning: the ratio's CI (±{}) did not reach the target before the budget ran out\n",
        percent(c.speedup.relative_half_width));
  return out;
}

std::string format_result(const BenchResult& result) {
  std::string out;
  for (const auto& w : result.environment.warnings) out += "***WARNING*** " + w + "\n";
  out += format_environment(result.environment) + "\n";
  if (result.comparison) out += format_comparison(*result.comparison);
  if (result.measurement) out += format_measurement(*result.measurement);
  const std::string reason = result.invalid_reason();
  out += "Result is : " + (reason.empty() ? std::string("VALID") : "INVALID (" + reason + ")") + "\n";
  return out;
}

}  // namespace torchperf

#include "torchperf/serve/serving_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <thread>

#include "torchperf/error.h"
#include "torchperf/feed/input_spec.h"
#include "torchperf/feed/length_distribution.h"
#include "torchperf/report/table_writer.h"
#include "torchperf/serve/batching_policy.h"
#include "torchperf/serve/bucket_plan.h"
#include "torchperf/serve/load_summary.h"
#include "torchperf/serve/shape_plan.h"
#include "torchperf/serve/torch_model_runner.h"
#include "torchperf/sweep/tune_options.h"

namespace torchperf {
namespace {

// The name a model is served under: the built-in's name, or the file's stem.
std::string default_name(const std::string& model) {
  if (model.rfind("builtin:", 0) == 0) {
    std::string name = model.substr(8);
    std::replace(name.begin(), name.end(), ':', '-');
    return name;
  }
  return std::filesystem::path(model).stem().string();
}

// How requests of a varying length are queued and merged, for the first line ("" without one).
std::string lengths_line(const ModelSignature& signature, const BatchingPolicy& batching) {
  const auto& l = signature.lengths;
  if (l.input < 0) return "";
  const auto& edges = batching.edges.empty() ? l.edges : batching.edges;
  return fmt::format("; lengths queued {}{}; {}",
                     edges.size() < 2 ? "in one bucket"
                                      : "in buckets " + describe_edges(edges),
                     batching.max_tokens > 0
                         ? fmt::format(", at most {} padded tokens a call", batching.max_tokens)
                         : std::string(),
                     l.check);
}

// The guard at every edge the queue pads to (the --buckets edges, else the padding knob's).
void check_bucket_edges(const BenchOptions& options, const ServerOptions& server,
                        std::vector<std::unique_ptr<ModelRunner>>& instances) {
  if (options.dims.empty()) return;
  const auto& signature = instances.front()->signature();
  const auto edges = server.batching.edges.empty() ? signature.lengths.edges : server.batching.edges;
  std::map<std::string, std::int64_t> shortest;
  for (const auto& d : options.dims) {
    const NamedDim dim = parse_dim_option(d);
    shortest[dim.name] = dim.distribution.min;
  }
  for (auto& instance : instances) instance->check_edges(edges, shortest);
}

// Issue 62, part 3: the call shapes the traffic will bring, planned from the --dim's lengths and
// the queue's policy, prepared on every instance before the first request; the line that says
// what was prepared and the share of requests each length covers ("" with --shapes lazy).
std::string prepare_planned_shapes(const ServeRequest& f, const BenchOptions& options,
                                   const ServerOptions& server,
                                   std::vector<std::unique_ptr<ModelRunner>>& instances) {
  const auto most = parse_shapes_option(f.shapes);
  if (!most || f.no_model) return "";
  const ModelSignature& signature = instances.front()->signature();
  std::vector<std::int64_t> drawn;
  if (!options.dims.empty() && signature.lengths.input >= 0)
    drawn = parse_dim_option(options.dims.front()).distribution.draw(4096, 0);
  const std::int64_t budget =
      f.shape_memory.empty() ? 0 : parse_size(f.shape_memory, "--shape-memory");
  // The lengths calls run at, as the runner forms them: its padding rule where lengths merge
  // (then, with graphs, the bucket's edge, never past the --dim's MAX), else each its own.
  BatchingPolicy policy = queue_policy(server.batching, signature);
  if (!signature.lengths.merge) policy.padded = [](std::int64_t l) { return l; };
  if (!drawn.empty()) {
    const std::int64_t longest = parse_dim_option(options.dims.front()).distribution.max;
    for (auto& e : policy.edges) e = std::min(e, longest);
    policy.edges.erase(std::unique(policy.edges.begin(), policy.edges.end()), policy.edges.end());
  }
  ShapePlan plan =
      plan_shapes(policy, drawn, signature.batch_min, signature.batch_max,
                  signature.graphs && (signature.lengths.merge || signature.lengths.input < 0),
                  *most, budget);
  plan.budget_s = parse_duration(f.shapes_time, "--shapes-time");
  PreparedShapes prepared;
  for (auto& instance : instances) prepared = instance->prepare_shapes(plan);
  return fmt::format("shape plan{}{}: {}", drawn.empty() ? "" : " for ",
                     drawn.empty() ? "" : options.dims.front(), prepared.describe(plan));
}

// What the flags allow that no request could ever meet, refused before the port opens (issue 84's
// probe: --max-tokens 10 with --dim S=4..64 started a server that could never serve lengths
// 11-64, then told a single sample to send fewer samples; --max-call-memory 1B one that refused
// everything).
void check_a_sample_fits(const BenchOptions& options, const ServerOptions& server,
                         const ModelSignature& signature) {
  const BatchingPolicy policy = queue_policy(server.batching, signature);
  const std::int64_t memory = memory_tokens(policy);
  if (options.dims.empty() || signature.lengths.input < 0) {
    // Without a length, a sample is the unit: memory_tokens is at least 1 where a bound exists,
    // so a bound below one sample's bytes is refused here by its figures.
    const double one_sample = policy.memory.fixed_bytes + policy.memory.bytes_per_token +
                              policy.memory.answer_bytes_per_token;
    if (policy.memory.call_bytes > 0 && policy.memory.bytes_per_token > 0 &&
        static_cast<double>(policy.memory.call_bytes) < one_sample)
      throw UsageError(fmt::format(
          "{}: one sample's call holds about {} ({}): a call may hold less, so every request "
          "would be refused; give more memory",
          policy.memory.call_bytes_from, format_bytes(static_cast<std::int64_t>(one_sample)),
          describe_figures(policy.memory, "sample")));
    return;
  }
  const NamedDim dim = parse_dim_option(options.dims.front());
  const std::int64_t one = padded_length(policy, dim.distribution.max);
  if (server.batching.max_tokens > 0 && server.batching.max_tokens < one)
    throw UsageError(fmt::format(
        "--max-tokens {}: one sample of {} at the --dim's longest, {}, takes {} padded tokens, so "
        "lengths past {} could never be served; give at least {} (or lower the --dim's MAX)",
        server.batching.max_tokens, dim.name, dim.distribution.max, one,
        server.batching.max_tokens, one));
  if (memory > 0 && memory < one)
    throw UsageError(fmt::format(
        "{}: a call may hold {} padded tokens by memory, and one sample of {} at the --dim's "
        "longest, {}, takes {} ({}); give more memory, or lower the --dim's MAX",
        policy.memory.call_bytes_from, memory, dim.name, dim.distribution.max, one,
        describe_figures(policy.memory, "padded token")));
}

// A bound turned off is said at start-up with what it leaves open (issue 84's probe:
// --max-call-memory off with --max-client-batch 100000 grew past 3 GiB on one request, unsaid).
std::string unbounded_warning(const ServeRequest& f, const BenchOptions& options,
                              const ServerOptions& server, const ModelSignature& signature) {
  if (f.max_call_memory != "off" || server.batching.max_tokens > 0) return "";
  const std::int64_t samples = server.batching.max_request_samples > 0
                                   ? server.batching.max_request_samples
                                   : std::max(kRequestSamples, signature.batch_min);
  std::string tokens;
  if (!options.dims.empty() && signature.lengths.input >= 0) {
    const NamedDim dim = parse_dim_option(options.dims.front());
    tokens = fmt::format(" of {}={} ({} padded tokens)", dim.name, dim.distribution.max,
                         samples * dim.distribution.max);
  }
  return fmt::format(
      "torchperf: warning: --max-call-memory off and no --max-tokens: a call is bounded by "
      "nothing but --max-client-batch, so one request of {} samples{} runs whole, whatever "
      "memory it takes",
      samples, tokens);
}

// --max-call-memory: a size, off (no bound), or auto (no bound until the model is loaded and the
// memory still available is known: available_call_memory).
BatchingPolicy::MemoryBound parse_call_memory(const std::string& text) {
  BatchingPolicy::MemoryBound bound;
  if (text == "auto" || text == "off") return bound;
  try {
    bound.call_bytes = parse_size(text, "--max-call-memory");
  } catch (const UsageError&) {
    throw UsageError(fmt::format(
        "--max-call-memory '{}': expected auto, off, or a size such as 512M or 8G", text));
  }
  bound.call_bytes_from = "--max-call-memory " + text;
  return bound;
}

// The queue's bucket edges: the flag's, else planned where a stream's winner sorted its batches
// by length (batching=sorted:W ran calls of like lengths; a queue comes closest by bucketing
// requests by length: one bucket ran the encoder of issue 84 at 0.81x); the line that says a
// plan ("" for none).
std::string set_buckets(const ServeRequest& r, const BenchOptions& options, ServerOptions& server) {
  const std::string batching = options.config.get("batching").value_or("");
  const std::string padding = options.config.get("padding").value_or("");
  std::string buckets = r.buckets;
  if (buckets.empty() && !options.dims.empty() && batching.rfind("sorted:", 0) == 0 &&
      padding.rfind("buckets:", 0) != 0)
    buckets = "plan:4";
  if (buckets.empty()) return "";
  std::optional<LengthDistribution> lengths;
  if (!options.dims.empty()) lengths = parse_dim_option(options.dims.front()).distribution;
  std::string plan;
  server.batching.edges = bucket_edges_option(buckets, lengths ? &*lengths : nullptr, &plan);
  if (plan.empty()) return "";
  return "bucket plan for " + options.dims.front() +
         (r.buckets.empty() ? " (batching=" + batching +
                                  " sorted the tune's batches by length: the queue buckets "
                                  "requests by it; --buckets one merges any lengths)"
                            : std::string()) +
         ": " + plan;
}

// Every flag parsed and checked, before anything loads.
ServerOptions parse_flags(const ServeRequest& r, BenchOptions& options, std::string& bucket_plan) {
  ServerOptions server = r.server;
  server.batching.max_queue_delay_s = parse_latency(r.max_queue_delay, "--max-queue-delay");
  server.batching.max_tokens =
      parse_whole_number(r.max_tokens, "--max-tokens", "padded tokens a call (0: no budget)");
  if (!r.max_client_batch.empty())
    server.batching.max_request_samples =
        parse_whole_number(r.max_client_batch, "--max-client-batch", "samples a request");
  parse_dim_options(options.dims);
  bucket_plan = set_buckets(r, options, server);
  validate(server.batching);
  if (r.instances == 0) throw UsageError("--instances: expected at least 1");
  parse_shapes_option(r.shapes);
  if (!r.shape_memory.empty()) parse_size(r.shape_memory, "--shape-memory");
  parse_duration(r.shapes_time, "--shapes-time");
  server.batching.memory = parse_call_memory(r.max_call_memory);
  return server;
}

}  // namespace

// What the tune measured of the configuration served, when a tune's file gave it: the figure to
// hold the server to (issue 84). A knob flag that changed the configuration is said.
std::string tuned_line(const ConfigurationFile& file, const Configuration& served) {
  const auto& t = file.tuned;
  if (t.samples_per_s <= 0) return "";
  const std::string changed =
      served.to_string() == file.configuration.to_string()
          ? ""
          : fmt::format(" (the tune's winner was {}: the flags changed it)",
                        file.configuration.to_string());
  // Over a stream of lengths the tune batched samples offline (a sorted window holds requests a
  // server has not received yet): the figure is that stream's, said so, not this queue's.
  const std::string stream =
      t.batching.empty()
          ? ""
          : fmt::format(" over the --dim's stream, its batches taken {} (a server's queue takes "
                        "requests as they arrive, by bucket)",
                        t.batching == "arrival" ? "in arrival order"
                                                : "from windows sorted by length (" +
                                                      t.batching + ")");
  return fmt::format(
      "tuned: {:.1f} samples/s (95% CI {:.1f}-{:.1f}){}{} at batch {}, {:.2f} ms a call ({}), "
      "measured by the tune in one process{}; `torchperf load` measures what this server "
      "answers",
      t.samples_per_s, t.low, t.high,
      t.tokens_per_s > 0 ? fmt::format(", {:.0f} useful tokens/s", t.tokens_per_s) : "", stream,
      t.batch, t.latency_p50_ms, t.batching.empty() ? "median" : "median, per batch of the pass",
      changed);
}

// A count flag as a whole number within int64 (issue 84's probe: 99999999999999999999 was capped
// in silence, 1e3 got the parser's bare "Could not convert").
std::int64_t parse_whole_number(const std::string& text, const std::string& flag,
                                const std::string& what) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || at != end || value < 0)
    throw UsageError(fmt::format("{} '{}': expected {} as a whole number, at most {}{}", flag,
                                 text, what, std::numeric_limits<std::int64_t>::max(),
                                 error == std::errc::result_out_of_range ? " (it is past that)"
                                                                         : ""));
  return value;
}

ServingPlan plan_serving(ServeRequest r,
                         const std::function<void(const Configuration&)>& before_loading) {
  BenchOptions& options = r.model;
  ServingPlan plan;
  std::string bucket_plan;
  plan.server = parse_flags(r, options, bucket_plan);
  ServerOptions& server = plan.server;
  if (r.no_model) {
    if (options.input_spec.empty())
      throw UsageError("--no-model: expected --input SPEC, the inputs the echo server takes");
    if (server.model_name.empty()) server.model_name = "echo";
    for (std::size_t i = 0; i < r.instances; ++i)
      plan.instances.push_back(
          std::make_unique<EchoRunner>(wire_inputs(parse_input_spec(options.input_spec))));
    plan.what = "no model (answers with its inputs)";
  } else {
    if (options.model.empty())
      throw UsageError("serve: expected a model (a TorchScript file, a torch.export program, "
                       "builtin:NAME, or a tune's folder)");
    // With several instances, each gets its share of the cores unless threads is set.
    if (r.instances > 1 && !options.config.get("threads"))
      options.config.set(
          "threads", std::to_string(std::max<unsigned>(1, std::thread::hardware_concurrency() /
                                                              static_cast<unsigned>(r.instances))));
    validate(options);
    if (before_loading) before_loading(options.config);
    if (server.model_name.empty()) server.model_name = default_name(options.model);
    plan.instances = load_model_instances(options, r.instances);
    plan.what =
        options.model + (options.config.empty() ? "" : " with " + options.config.to_string());
  }
  auto& instances = plan.instances;
  check_bucket_edges(options, server, instances);
  if (r.max_call_memory != "off") instances.front()->measure_call_memory();
  if (r.max_call_memory == "auto")
    server.batching.memory = available_call_memory(instances.front()->signature(), r.instances);
  const ModelSignature& signature = instances.front()->signature();
  check_a_sample_fits(options, server, signature);
  if (const std::string open = unbounded_warning(r, options, server, signature); !open.empty())
    plan.warnings.push_back(open);
  const std::string memory =
      describe_call_memory(signature, queue_policy(server.batching, signature));
  const std::string shapes = prepare_planned_shapes(r, options, server, instances);
  plan.lengths = lengths_line(instances.front()->signature(), server.batching);
  plan.start = instances.front()->signature().start.empty()
                   ? ""
                   : " (" + instances.front()->signature().start + ")";
  if (r.file)
    if (const std::string tuned = tuned_line(*r.file, options.config); !tuned.empty())
      plan.lines.push_back(tuned);
  for (const auto& line : {bucket_plan, shapes, memory})
    if (!line.empty()) plan.lines.push_back(line);
  return plan;
}

}  // namespace torchperf

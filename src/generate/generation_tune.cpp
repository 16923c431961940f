#include "torchperf/generate/generation_tune.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "torchperf/error.h"
#include "torchperf/serve/load_summary.h"
#include "torchperf/text.h"

namespace torchperf {

GenerationSlo GenerationSlo::parse(const std::string& text) {
  GenerationSlo slo;
  if (text.empty() || text == "none") return slo;
  // MLPerf Inference's LLM latency limits (llama3.1-8b's server scenario, and its interactive one).
  if (text == "mlperf-llama3.1-8b") return {2.0, 0.100};
  if (text == "mlperf-interactive") return {0.500, 0.030};
  for (const auto& part : split(text, ',')) {
    const auto eq = part.find('=');
    const std::string name = eq == std::string::npos ? part : trim(part.substr(0, eq));
    if (eq == std::string::npos || (name != "ttft" && name != "tpot"))
      throw UsageError("--slo '" + text +
                       "': expected ttft=DURATION,tpot=DURATION (p99s, e.g. ttft=500ms,tpot=30ms), "
                       "mlperf-llama3.1-8b or mlperf-interactive");
    const double seconds = parse_latency(trim(part.substr(eq + 1)), "--slo " + name);
    (name == "ttft" ? slo.ttft_p99_s : slo.tpot_p99_s) = seconds;
  }
  return slo;
}

std::optional<std::string> GenerationSlo::missed_by(const GenerationFigures& f) const {
  if (ttft_p99_s && f.ttft_s.p99 > *ttft_p99_s)
    return fmt::format("time to first token p99 {:.1f} ms > {:.1f} ms", f.ttft_s.p99 * 1e3,
                       *ttft_p99_s * 1e3);
  if (tpot_p99_s && f.tpot_s.p99 > *tpot_p99_s)
    return fmt::format("time per output token p99 {:.2f} ms > {:.2f} ms", f.tpot_s.p99 * 1e3,
                       *tpot_p99_s * 1e3);
  return std::nullopt;
}

std::string GenerationSlo::to_string() const {
  std::vector<std::string> parts;
  if (ttft_p99_s) parts.push_back(fmt::format("ttft p99 <= {:g} ms", *ttft_p99_s * 1e3));
  if (tpot_p99_s) parts.push_back(fmt::format("tpot p99 <= {:g} ms", *tpot_p99_s * 1e3));
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

namespace {

// A compile's or an export's price before any point has paid one (seconds): what this 2-core
// machine paid for an 8-layer decoder (docs/generation.md); the measured ones replace it.
constexpr double kCompilePrior = 60;
constexpr double kExportPrior = 60;
constexpr double kPointPrior = 20;

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

double expected_price_s(const GenerationSettings& settings,
                        const std::vector<GenerationPoint>& done) {
  std::vector<double> plain, same_kind;
  const auto kind = [](const GenerationSettings& s) {
    if (s.at("engine") != "pytorch") return s.at("engine");
    return s.at("compile") == "off" ? std::string() : "compile=" + s.at("compile");
  };
  for (const auto& p : done) {
    if (!p.measured) continue;
    if (kind(p.settings).empty()) plain.push_back(p.wall_s);
    if (!kind(settings).empty() && kind(p.settings) == kind(settings))
      same_kind.push_back(p.figures.setup_s());
  }
  double price = plain.empty() ? kPointPrior : median_of(plain);
  if (!kind(settings).empty()) {
    const double prior = settings.at("engine") != "pytorch" ? kExportPrior : kCompilePrior;
    price += same_kind.empty() ? prior : median_of(same_kind);
  }
  return price;
}

std::optional<std::size_t> pick_winner(const std::vector<GenerationPoint>& points,
                                       const GenerationSlo& slo) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    if (!p.valid() || slo.missed_by(p.figures)) continue;
    if (!best || p.figures.decode_tokens_per_s.median >
                     points[*best].figures.decode_tokens_per_s.median)
      best = i;
  }
  return best;
}

namespace {

std::size_t changes_from(const GenerationSettings& s, const GenerationSettings& base) {
  std::size_t n = 0;
  for (const auto& [k, v] : s) n += base.count(k) && base.at(k) != v;
  return n;
}

struct Planned {
  std::int64_t batch;
  GenerationSettings settings;
};

// Per batch: the baseline, then fewer changes before more, runs before compiles and exports.
std::vector<Planned> plan(const GenerationTuneOptions& o, const GenerationSpace& space,
                          const GenerationSettings& base) {
  std::vector<Planned> out;
  for (auto batch : o.batches)
    for (const auto& s : space.points) out.push_back({batch, s});
  const auto heavy = [](const GenerationSettings& s) {
    return s.at("compile") != "off" || s.at("engine") != "pytorch";
  };
  std::stable_sort(out.begin(), out.end(), [&](const Planned& a, const Planned& b) {
    const auto key = [&](const Planned& p) {
      return std::make_tuple(changes_from(p.settings, base), heavy(p.settings), p.batch);
    };
    return key(a) < key(b);
  });
  return out;
}

std::vector<GenerationPoint> read_journal(const std::string& path, const std::string& workload) {
  std::vector<GenerationPoint> points;
  std::ifstream in(path);
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (trim(line).empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      continue;  // the line a kill cut short: that point runs again
    }
    if (number == 1) {
      if (j.value("workload", "") != workload)
        throw ResultsError("'" + path + "' is the journal of another generation tune (" +
                           j.value("workload", "?") + "); give another --out");
      continue;
    }
    try {
      points.push_back(generation_point_from_json(j));
    } catch (const nlohmann::json::exception& e) {
      throw ResultsError("'" + path + "' line " + std::to_string(number) + ": " + e.what());
    }
  }
  return points;
}

std::string workload_key(const GenerationTuneOptions& o) {
  const auto& w = o.workload;
  return fmt::format("{} prompt={} new_tokens={} device={} seed={} calls={}+{}", w.source.text(),
                     w.prompt.text, w.new_tokens, w.device, w.seed, w.warmup_calls, w.timed_calls);
}

}  // namespace

GenerationTuneResult run_generation_tune(const GenerationTuneOptions& o,
                                         const GenerationProgress& progress) {
  const auto started = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  check_workload(o.workload);
  std::filesystem::create_directories(o.out_dir + "/logs");
  GenerationTuneResult result;
  const auto traits = generation_traits(o.workload.device);
  const auto space = generation_space(traits, o.space);
  for (const auto& why : space.left_out) result.notes.push_back("left out " + why);
  const std::string journal = o.out_dir + "/generation.jsonl";
  const std::string key = workload_key(o);
  auto done = read_journal(journal, key);

  // The reference first: a model that cannot generate, or prompts it cannot hold, are said before
  // any point runs, and leave no journal behind.
  const std::string reference = o.out_dir + "/reference.pt";
  if (progress) progress(0, 0, "the fp32 eager reference");
  const auto said = run_generation_reference(o.workload, reference, o.out_dir + "/logs", o.limits);
  result.model = said.dump();
  if (done.empty()) std::ofstream(journal) << nlohmann::json{{"workload", key}}.dump() << "\n";

  std::set<std::string> measured;
  for (const auto& p : done) measured.insert(p.label());
  const auto base = baseline_settings(traits);
  const auto planned = plan(o, space, base);
  std::size_t index = 0;
  for (const auto& next : planned) {
    ++index;
    GenerationPoint probe;
    probe.settings = next.settings;
    probe.batch = next.batch;
    if (measured.count(probe.label())) continue;
    const double price = expected_price_s(next.settings, done);
    const double left = o.budget_s - elapsed();
    if (o.budget_s > 0 && price > left && !done.empty()) {
      result.notes.push_back(fmt::format("not measured: {} (its price, about {:.0f} s, passes the "
                                         "{:.0f} s of budget left)",
                                         probe.label(), price, std::max(0.0, left)));
      continue;
    }
    if (progress) progress(index - 1, planned.size(), probe.label());
    const std::string log = fmt::format("{}/logs/point-{:03d}.log", o.out_dir, done.size() + 1);
    auto point = run_generation_point(o.workload, next.settings, next.batch, reference, log,
                                      o.limits, o.guard);
    std::ofstream(journal, std::ios::app) << to_json(point).dump() << "\n";
    measured.insert(point.label());
    done.push_back(std::move(point));
  }
  if (progress) progress(planned.size(), planned.size(), "done");
  result.points = std::move(done);
  for (std::size_t i = 0; i < result.points.size(); ++i)
    if (result.points[i].settings == base && result.points[i].batch == o.batches.front() &&
        result.points[i].measured)
      result.baseline = i;
  result.winner = pick_winner(result.points, o.slo);
  result.wall_s = elapsed();
  return result;
}

}  // namespace torchperf

#include "torchperf/serve/serve_tune_report.h"

#include <fmt/format.h>

#include <cmath>

#include "torchperf/json_fields.h"
#include "torchperf/report/html_report.h"
#include "torchperf/serve/batching_policy.h"

namespace torchperf {
namespace {

std::string ms(double s) { return std::isfinite(s) ? fmt::format("{:.1f} ms", s * 1e3) : "-"; }

const PercentileLatency* percentile(const LoadSummary& s, double q) {
  for (const auto& p : s.latency)
    if (std::abs(p.quantile - q) < 1e-9) return &p;
  return nullptr;
}

// The objective's quantile as measured in a trial: the run's estimate (NaN when none).
double measured_quantile(const RateTrial& t, double q) {
  const PercentileLatency* p = percentile(t.summary, q);
  return p ? p->value_s : std::nan("");
}

}  // namespace

TextTable serve_tune_table(const ServeTuneResult& r, const ServeTuneOptions& o) {
  const std::string p = "p" + fmt::format("{:g}", o.objective.quantile * 100);
  TextTable t;
  t.header = {"candidate",
              "predicted max rate",
              "measured best rate",
              p + " measured",
              p + " bound (99%)",
              p + " predicted",
              "runs",
              "note"};
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const CandidateResult& c = r.candidates[i];
    std::vector<std::string> row = {c.candidate.label(),
                                    fmt::format("{:.0f}/s", c.predicted_max_rate)};
    if (c.best_trial) {
      const RateTrial& b = c.trials[*c.best_trial];
      row.push_back(fmt::format("{:.0f}/s", b.rate_per_s));
      row.push_back(ms(measured_quantile(b, o.objective.quantile)));
      row.push_back(ms(b.summary.verdict ? b.summary.verdict->upper_bound_s : std::nan("")));
      row.push_back(ms(b.predicted_s));
    } else {
      row.insert(row.end(), {c.measured ? "none valid" : "-", "-", "-", "-"});
    }
    row.push_back(std::to_string(c.trials.size()));
    std::string note = c.skipped.empty() ? "" : "not run: " + c.skipped;
    if (r.winner && *r.winner == i) note = "WINNER";
    if (r.unbatched && *r.unbatched == i)
      note += std::string(note.empty() ? "" : ", ") + "one request per forward";
    if (c.refined) note += std::string(note.empty() ? "" : ", ") + "the best's delay refined";
    row.push_back(note);
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string serve_tune_break_even(const ServeTuneResult& r) {
  if (!r.fastest || !r.quickest || *r.fastest == *r.quickest) return "";
  const CandidateResult& f = r.candidates[*r.fastest];
  const CandidateResult& q = r.candidates[*r.quickest];
  const auto n = break_even_requests(f.best_rate(), f.start_s, q.best_rate(), q.start_s);
  if (!n) return "";
  return fmt::format(
      "break-even: {} ({:.0f}/s, ready in {:.1f} s) has answered more requests than {} ({:.0f}/s, "
      "ready in {:.1f} s) once past {:.0f} requests; serve-tune --requests N weighs it",
      f.candidate.label(), f.best_rate(), f.start_s, q.candidate.label(), q.best_rate(), q.start_s,
      *n);
}

std::string serve_tune_verdict(const ServeTuneResult& r, const ServeTuneOptions& o) {
  if (!r.winner) return "";
  const CandidateResult& w = r.candidates[*r.winner];
  std::string out = fmt::format("winner: {} at {:.0f} requests/s within the objective",
                                w.candidate.label(), w.best_rate());
  if (o.expected_requests > 0)
    out += fmt::format(", {:.0f}/s over {:g} requests with its {:.1f} s start",
                       amortised_rate(w.best_rate(), w.start_s, o.expected_requests),
                       o.expected_requests, w.start_s);
  if (r.unbatched && r.candidates[*r.unbatched].best_rate() > 0 && *r.unbatched != *r.winner)
    out += fmt::format("; {:.2f}x one request per forward ({:.0f}/s)",
                       w.best_rate() / r.candidates[*r.unbatched].best_rate(),
                       r.candidates[*r.unbatched].best_rate());
  return out;
}

nlohmann::json to_json(const ServeTuneResult& r, const ServeTuneOptions& o) {
  nlohmann::json j = {{"schema", "torchperf.serve-tune/1"},
                      {"objective", o.objective.text},
                      {"budget_s", o.budget_s},
                      {"elapsed_s", r.elapsed_s},
                      {"stopped", r.stopped},
                      {"expected_requests", o.expected_requests},
                      {"break_even", serve_tune_break_even(r)},
                      {"curves", nlohmann::json::object()},
                      {"candidates", nlohmann::json::array()}};
  for (const auto& [threads, curve] : r.curves)
    for (const auto& [batch, s] : curve.points())
      j["curves"][std::to_string(threads)][std::to_string(batch)] = s;
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const CandidateResult& c = r.candidates[i];
    nlohmann::json cj = {{"instances", c.candidate.instances},
                         {"threads", c.candidate.threads},
                         {"max_batch", c.candidate.max_batch},
                         {"max_queue_delay_s", c.candidate.max_queue_delay_s},
                         {"buckets", c.candidate.edges},
                         {"max_tokens", c.candidate.max_tokens},
                         {"predicted_max_rate", c.predicted_max_rate},
                         {"measured", c.measured},
                         {"skipped", c.skipped},
                         {"best_rate", c.best_rate()},
                         {"start_s", c.start_s},
                         {"amortised_rate",
                          amortised_rate(c.best_rate(), c.start_s, o.expected_requests)},
                         {"refined", c.refined},
                         {"winner", r.winner && *r.winner == i},
                         {"unbatched", r.unbatched && *r.unbatched == i},
                         {"batch_sizes", nlohmann::json::object()},
                         {"trials", nlohmann::json::array()}};
    for (const auto& [b, n] : c.batch_sizes) cj["batch_sizes"][std::to_string(b)] = n;
    for (const auto& t : c.trials)
      cj["trials"].push_back({{"rate_per_s", t.rate_per_s},
                              {"duration_s", t.duration_s},
                              {"valid", t.valid},
                              {"predicted_s", nullable(t.predicted_s)},
                              {"summary", to_json(t.summary)}});
    j["candidates"].push_back(std::move(cj));
  }
  return j;
}

std::string serve_tune_csv(const ServeTuneResult& r, const ServeTuneOptions& o) {
  std::string out =
      "instances,threads,max_batch,max_queue_delay_s,rate_per_s,duration_s,requests,ok,"
      "valid,measured_s,upper_bound_s,predicted_s,buckets,max_tokens\n";
  for (const auto& c : r.candidates)
    for (const auto& t : c.trials)
      out += fmt::format("{},{},{},{:g},{:.3f},{:.3f},{},{},{},{:.6f},{:.6f},{:.6f},{},{}\n",
                         c.candidate.instances, c.candidate.threads, c.candidate.max_batch,
                         c.candidate.max_queue_delay_s, t.rate_per_s, t.duration_s,
                         t.summary.requests, t.summary.ok, t.valid ? "true" : "false",
                         measured_quantile(t, o.objective.quantile),
                         t.summary.verdict ? t.summary.verdict->upper_bound_s : std::nan(""),
                         t.predicted_s, describe_edges(c.candidate.edges), c.candidate.max_tokens);
  return out;
}

std::string serve_tune_html(const ServeTuneResult& r, const ServeTuneOptions& o,
                            const std::string& model) {
  const std::string p = "p" + fmt::format("{:g}", o.objective.quantile * 100);
  nlohmann::json points = nlohmann::json::array();
  int marks = 0;
  for (const auto& c : r.candidates)
    for (const auto& t : c.trials) {
      const double measured = measured_quantile(t, o.objective.quantile);
      if (!std::isfinite(measured)) continue;
      points.push_back({{"candidate", c.candidate.label()},
                        {"rate", t.rate_per_s},
                        {"latency_ms", measured * 1e3},
                        {"kind", "measured"},
                        {"valid", t.valid}});
      points.push_back({{"candidate", c.candidate.label()},
                        {"rate", t.rate_per_s},
                        {"latency_ms", t.predicted_s * 1e3},
                        {"kind", "predicted"},
                        {"valid", t.valid}});
      marks += 2;
    }
  HtmlPage page;
  page.title = "torchperf serve-tune: " + model;
  page.header_lines = {fmt::format("objective {}; budget {:.0f} s, used {:.0f} s", o.objective.text,
                                   o.budget_s, r.elapsed_s),
                       serve_tune_verdict(r, o), serve_tune_break_even(r)};
  page.body_before_plots = "<h2>Candidates</h2>" + html_table(serve_tune_table(r, o));
  Panel latency;
  latency.id = "latency-vs-load";
  latency.title = p + " latency against offered load";
  latency.caption =
      "Each load run of each candidate: filled points measured, hollow ones the "
      "queueing model's prediction; the dashed line is the objective.";
  latency.spec = {
      {"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
      {"width", 640},
      {"height", 360},
      {"layer",
       {{{"data", {{"values", points}}},
         {"mark", {{"type", "point"}, {"size", 60}}},
         {"encoding",
          {{"x",
            {{"field", "rate"}, {"type", "quantitative"}, {"title", "offered load (requests/s)"}}},
           {"y",
            {{"field", "latency_ms"},
             {"type", "quantitative"},
             {"scale", {{"type", "log"}}},
             {"title", p + " latency (ms)"}}},
           {"color", {{"field", "candidate"}, {"type", "nominal"}}},
           {"shape", {{"field", "kind"}, {"type", "nominal"}}},
           {"fill",
            {{"condition", {{"test", "datum.kind == 'measured'"}, {"field", "candidate"}}},
             {"value", "transparent"}}},
           {"tooltip",
            {{{"field", "candidate"}},
             {{"field", "rate"}},
             {{"field", "latency_ms"}},
             {{"field", "kind"}},
             {{"field", "valid"}}}}}}},
        {{"data", {{"values", {{{"limit", o.objective.limit_s * 1e3}}}}}},
         {"mark", {{"type", "rule"}, {"strokeDash", {6, 4}}, {"color", "#c0392b"}}},
         {"encoding", {{"y", {{"field", "limit"}, {"type", "quantitative"}}}}}}}}};
  latency.expected_marks = {{"symbol", marks}};
  page.panels.push_back(latency);
  if (r.winner && !r.candidates[*r.winner].batch_sizes.empty()) {
    nlohmann::json bars = nlohmann::json::array();
    for (const auto& [b, n] : r.candidates[*r.winner].batch_sizes)
      bars.push_back({{"batch", "<= " + std::to_string(b)}, {"order", b}, {"calls", n}});
    Panel hist;
    hist.id = "batch-sizes";
    hist.title = "The winner's batch sizes";
    hist.caption = "Model calls by the number of requests they held, over the winner's load runs.";
    hist.spec = {
        {"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
        {"width", 480},
        {"height", 240},
        {"data", {{"values", bars}}},
        {"mark", "bar"},
        {"encoding",
         {{"x",
           {{"field", "batch"},
            {"type", "ordinal"},
            {"sort", {{"field", "order"}}},
            {"title", "requests per model call"}}},
          {"y", {{"field", "calls"}, {"type", "quantitative"}, {"title", "model calls"}}}}}};
    hist.expected_marks = {{"rect", static_cast<int>(bars.size())}};
    page.panels.push_back(hist);
  }
  return render_page(page);
}

}  // namespace torchperf

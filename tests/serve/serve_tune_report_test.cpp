#include "torchperf/serve/serve_tune_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/test_support.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

LoadSummary run_at(double rate, double p99_s, bool valid) {
  std::vector<RequestRecord> records;
  for (int i = 0; i < 500; ++i) {
    const double at = i / rate;
    const double latency = i < 495 ? p99_s / 2 : p99_s;
    records.push_back({at, at, at + latency, RequestOutcome::kOk});
  }
  LatencyObjective objective = parse_latency_objective(valid ? "p99=1s" : "p99=1ms");
  return summarize_load(records, 500 / rate, objective);
}

// Two candidates measured (one request per call, and the batched winner), one deferred.
ServeTuneResult known_result() {
  ServeTuneResult r;
  r.curves[2] = ServiceCurve({{1, 0.014}, {8, 0.077}});
  CandidateResult unbatched;
  unbatched.candidate = {1, 2, 1, 0.001};
  unbatched.predicted_max_rate = 68;
  unbatched.measured = true;
  unbatched.trials = {{60, 10, run_at(60, 0.4, false), false, 0.07},
                      {39, 15, run_at(39, 0.15, true), true, 0.05}};
  unbatched.best_trial = 1;
  CandidateResult batched;
  batched.candidate = {2, 1, 2, 0.001};
  batched.predicted_max_rate = 99;
  batched.measured = true;
  batched.trials = {{80, 8, run_at(80, 0.46, true), true, 0.13},
                    {96, 7, run_at(96, 0.9, false), false, 0.2}};
  batched.best_trial = 0;
  batched.batch_sizes = {{1, 300}, {2, 450}};
  CandidateResult deferred;
  deferred.candidate = {1, 1, 32, 0.005};
  deferred.predicted_max_rate = 44;
  deferred.skipped = "predicted 24/s, below the best measured (80/s)";
  r.candidates = {unbatched, batched, deferred};
  r.unbatched = 0;
  r.winner = 1;
  r.elapsed_s = 354;
  return r;
}

ServeTuneOptions known_options() {
  ServeTuneOptions o;
  o.objective = parse_latency_objective("p99=500ms");
  o.budget_s = 900;
  return o;
}

TEST(ServeTuneReportTest, TheTableShowsPredictedBesideMeasuredAndWhyACandidateWasNotRun) {
  const std::string text = serve_tune_table(known_result(), known_options()).render(TextFormat::kTerminal);
  EXPECT_NE(text.find("instances=2 threads=1 max_batch=2 delay=1ms"), std::string::npos);
  EXPECT_NE(text.find("99/s"), std::string::npos);
  EXPECT_NE(text.find("80/s"), std::string::npos);
  EXPECT_NE(text.find("WINNER"), std::string::npos);
  EXPECT_NE(text.find("one request per forward"), std::string::npos);
  EXPECT_NE(text.find("not run: predicted 24/s"), std::string::npos);
  EXPECT_EQ(serve_tune_verdict(known_result(), known_options()),
            "winner: instances=2 threads=1 max_batch=2 delay=1ms at 80 requests/s within the "
            "objective; 2.05x one request per forward (39/s)");
}

TEST(ServeTuneReportTest, StartUpWeighedSaysTheRateOverTheRequestsAndTheBreakEven) {
  ServeTuneResult r = known_result();
  r.candidates[0].start_s = 1;   // one request per forward: ready in 1 s, 39/s
  r.candidates[1].start_s = 10;  // the batched winner: ready in 10 s, 80/s
  r.fastest = 1;
  r.quickest = 0;
  ServeTuneOptions o = known_options();
  o.expected_requests = 1000;
  // 1000 / (10 + 1000/80) = 44/s; the break-even (10 - 1) / (1/39 - 1/80) = 685 requests.
  EXPECT_NE(serve_tune_verdict(r, o).find(", 44/s over 1000 requests with its 10.0 s start"),
            std::string::npos)
      << serve_tune_verdict(r, o);
  EXPECT_EQ(serve_tune_break_even(r),
            "break-even: instances=2 threads=1 max_batch=2 delay=1ms (80/s, ready in 10.0 s) has "
            "answered more requests than instances=1 threads=2 max_batch=1 delay=1ms (39/s, ready "
            "in 1.0 s) once past 685 requests; serve-tune --requests N weighs it");
  const nlohmann::json j = to_json(r, o);
  EXPECT_EQ(j.at("expected_requests"), 1000);
  EXPECT_NEAR(j.at("candidates")[1].at("amortised_rate").get<double>(), 1000 / 22.5, 1e-9);
  EXPECT_EQ(j.at("break_even"), serve_tune_break_even(r));
  r.quickest = 1;  // the fastest is also ready soonest: nothing to weigh
  EXPECT_EQ(serve_tune_break_even(r), "");
}

TEST(ServeTuneReportTest, TheJsonAndCsvCarryEveryLoadRun) {
  const nlohmann::json j = to_json(known_result(), known_options());
  EXPECT_EQ(j.at("schema"), "torchperf.serve-tune/1");
  EXPECT_EQ(j.at("candidates").size(), 3u);
  EXPECT_EQ(j.at("candidates")[1].at("trials").size(), 2u);
  EXPECT_TRUE(j.at("candidates")[1].at("winner").get<bool>());
  EXPECT_EQ(j.at("candidates")[1].at("batch_sizes").at("2"), 450);
  EXPECT_DOUBLE_EQ(j.at("curves").at("2").at("8").get<double>(), 0.077);
  const std::string csv = serve_tune_csv(known_result(), known_options());
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 4);
}

TEST(ServeTuneReportTest, ThePlotsDrawEveryRunAndTheBatchSizesInHeadlessChromium) {
  const fs::path dir = fs::temp_directory_path() / ("torchperf-serve-html-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path page = dir / "serve-tune.html";
  std::ofstream(page) << serve_tune_html(known_result(), known_options(), "builtin:resnet18");
  fs::create_directories("test-artifacts");
  const fs::path shot = fs::absolute(fs::path("test-artifacts") / "serve-tune.png");
  const std::string dom = testing::browser_dom(page.string(), dir.string(), shot.string());
  const std::string marker = "id=\"torchperf-status\">";
  const auto at = dom.find(marker);
  ASSERT_NE(at, std::string::npos) << "the page never finished drawing";
  const auto status = nlohmann::json::parse(
      dom.substr(at + marker.size(), dom.find("</p>", at) - at - marker.size()));
  EXPECT_TRUE(status.at("done").get<bool>());
  EXPECT_TRUE(status.at("errors").empty()) << status.at("errors").dump();
  EXPECT_EQ(status.at("marks").at("latency-vs-load").value("symbol", -1), 8);  // 4 runs x 2
  EXPECT_EQ(status.at("marks").at("batch-sizes").value("rect", -1), 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace torchperf

#include "torchperf/generate/generation_report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/test_support.h"

namespace torchperf {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GenerationReportTest, TheTableMarksTheWinnerAndSaysItsGainOverHfGenerate) {
  GenerationTuneResult r;
  const auto make = [](GenerationSettings s, double rate) {
    GenerationPoint p;
    p.settings = std::move(s);
    p.batch = 1;
    p.measured = true;
    p.figures.decode_tokens_per_s.median = rate;
    p.figures.decode_tokens_per_s.median_ci = {rate * 0.9, rate * 1.1};
    p.figures.ttft_s.median = 0.03;
    p.figures.tpot_s.median = 1 / rate;
    return p;
  };
  r.points = {make({{"engine", "pytorch"}, {"precision", "fp32"}}, 50),
              make({{"engine", "pytorch"}, {"precision", "bf16"}}, 90)};
  r.points[1].figures.code = "model = model.to(torch.bfloat16)\n";  // the point's Python wrote it
  GenerationPoint failed;
  failed.settings = {{"engine", "pytorch"}, {"compile", "forward"}};
  failed.error = "torch.compile failed";
  r.points.push_back(failed);
  r.baseline = 0;
  r.winner = 1;
  r.notes = {"left out precision=fp16: fp16 has fast kernels on CUDA only"};
  const auto text = format_generation_result(r);
  EXPECT_TRUE(contains(text, "precision=bf16 *")) << text;
  EXPECT_TRUE(contains(text, "HF generate, eager fp32")) << text;
  EXPECT_TRUE(contains(text, "(1.80x HF generate eager fp32 at batch 1)")) << text;
  EXPECT_TRUE(contains(text, "failed: torch.compile failed")) << text;
  EXPECT_TRUE(contains(text, "note: left out precision=fp16")) << text;
  EXPECT_TRUE(contains(text, "In your program (transformers):\nmodel = model.to(torch.bfloat16)"))
      << text;
  const auto j = generation_result_json(r);
  EXPECT_EQ(j.at("winner"), 1);
  EXPECT_EQ(j.at("points").size(), 3u);
  EXPECT_TRUE(contains(j.at("snippet").get<std::string>(), "bfloat16"));
}

GenerationPoint measured_point(const std::string& cache, std::int64_t batch, double rate, double ttft) {
  GenerationPoint p;
  p.settings = {{"engine", "pytorch"}, {"cache", cache}};
  p.batch = batch;
  p.measured = true;
  p.figures.decode_tokens_per_s.median = rate;
  p.figures.ttft_s.median = ttft;
  p.figures.tpot_s.median = 1 / rate;
  return p;
}

TEST(GenerationReportTest, TheFrontKeepsWhatNoOtherPointBeatsOnDecodeRateAndTtftAtOnce) {
  GenerationTuneResult r;
  r.points = {measured_point("dynamic", 1, 100, 0.050), measured_point("static", 1, 90, 0.060),
              measured_point("dynamic", 8, 500, 0.300), measured_point("static", 8, 900, 0.200)};
  r.points[3].guard_failure = "changes the text";  // refused: never on the front
  EXPECT_EQ(generation_front(r), (std::vector<std::size_t>{0, 2}));
}

TEST(GenerationReportTest, ThePageDrawsEveryPointAndTheFrontInHeadlessChromium) {
  GenerationTuneResult r;
  r.points = {measured_point("dynamic", 1, 100, 0.050), measured_point("static", 1, 90, 0.060),
              measured_point("dynamic", 8, 500, 0.300)};
  r.points[1].guard_failure = "changes the text";
  GenerationPoint failed;
  failed.settings = {{"engine", "pytorch"}, {"compile", "forward"}};
  failed.error = "a compile failed";
  r.points.push_back(failed);
  r.winner = 2;
  r.points[2].figures.code = "model.generation_config.cache_implementation = 'static'\n";
  const auto dir = std::filesystem::temp_directory_path() /
                   ("torchperf-generation-page-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto page = dir / "report.html";
  std::ofstream(page) << generation_page(r, "hf:/models/tiny");
  const std::string dom = testing::browser_dom(page.string(), dir.string(),
                                               (dir / "generation.png").string());
  const std::string marker = "id=\"torchperf-status\">";
  const auto at = dom.find(marker);
  ASSERT_NE(at, std::string::npos) << dom.substr(0, 500);
  const auto status = nlohmann::json::parse(
      dom.substr(at + marker.size(), dom.find("</p>", at) - at - marker.size()));
  EXPECT_TRUE(status.at("errors").empty()) << status.dump();
  // Three measured points (the failed one is in the table only); the front's line through the
  // two valid points no other beats (a line's items are its points).
  EXPECT_EQ(status.at("marks").at("generation-front").value("symbol", -1), 3) << status.dump();
  EXPECT_EQ(status.at("marks").at("generation-front").value("line", -1), 2) << status.dump();
  EXPECT_TRUE(contains(dom, "failed: a compile failed"));
  EXPECT_TRUE(contains(dom, "The winner in your program"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace torchperf

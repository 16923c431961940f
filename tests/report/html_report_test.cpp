// The HTML report opened in a real browser (Debian's chromium, headless): every panel must draw
// as many marks as it has points, with no error, and a screenshot is kept as a test artefact.
#include "torchperf/report/html_report.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/known_runs.h"
#include "support/test_support.h"
#include "torchperf/report/vega_specs.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHostileLabel = "server<!--<script>x&amp;";  // no '/': a directory name

class HtmlReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("torchperf-html-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_synthetic_run((dir_ / "laptop").string(), testing::known_run());
    auto other = testing::known_run();
    other.model = "builtin:encoder";
    // A run label is a directory name: anything, markup included. It must not break the page.
    testing::write_synthetic_run((dir_ / kHostileLabel).string(), other);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Loads the page headless and returns what its driver wrote into #torchperf-status.
  nlohmann::json render_in_chromium(const fs::path& page, const fs::path& screenshot) {
    const std::string text =
        testing::browser_dom(page.string(), dir_.string(), screenshot.string());
    const std::string marker = "id=\"torchperf-status\">";
    const auto at = text.find(marker);
    if (at == std::string::npos) return nullptr;
    const auto end = text.find("</p>", at);
    const std::string status = text.substr(at + marker.size(), end - at - marker.size());
    auto j = nlohmann::json::parse(status, nullptr, false);
    if (j.is_discarded()) ADD_FAILURE() << "status is not JSON: " << status;
    return j;
  }
  fs::path dir_;
};

TEST_F(HtmlReportTest, ThePageIsSelfContained) {
  const std::string html = render_html({analyze(load_run((dir_ / "laptop").string()))});
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("https://cdn"), std::string::npos);
  EXPECT_NE(html.find("vegaEmbed"), std::string::npos);
  EXPECT_GT(html.size(), 500'000u);  // the three libraries are inline
  // Every number of the text report is on the page too.
  EXPECT_NE(html.find("use format=channels_last only together with precision=bf16-autocast"),
            std::string::npos);
  EXPECT_NE(html.find("worker died on signal SIGSEGV"), std::string::npos);
  EXPECT_NE(html.find("torch::jit::load"), std::string::npos);
}

TEST_F(HtmlReportTest, ThePageIsTitledWithTheModelsNameNeverATemporaryPath) {
  const std::string laptop = (dir_ / "laptop").string();
  std::string html = render_html({analyze(load_run(laptop))});
  EXPECT_NE(html.find("<title>torchperf report: " + testing::known_run().model), std::string::npos)
      << html.substr(0, 2000);
  // A tune started from Python names the module's class beside its journal.
  std::ofstream(fs::path(laptop) / "source.json") << R"({"model": "mymodels.Net"})";
  html = render_html({analyze(load_run(laptop))});
  EXPECT_NE(html.find("<title>torchperf report: mymodels.Net</title>"), std::string::npos);
  // The render status is for tests and tools, not for readers.
  EXPECT_NE(html.find("#torchperf-status{display:none}"), std::string::npos);
}

TEST_F(HtmlReportTest, ASmartSearchSaysHowItSpentItsPoints) {
  auto run = testing::known_run();
  run.search = {{"strategy", "smart"}, {"spent", "screen 13, explore 4, final 4"},
                {"brief_time_s", 0.5}, {"brief_points", 17}, {"full_points", 4}};
  testing::write_synthetic_run((dir_ / "smart").string(), run);
  const std::string html = render_html({analyze(load_run((dir_ / "smart").string()))});
  EXPECT_NE(html.find("Smart search: screen 13, explore 4, final 4 points; 17 measured briefly "
                      "(0.5 s each), 4 in full"),
            std::string::npos);
  run.search["brief_workers"] = 5;
  testing::write_synthetic_run((dir_ / "shared").string(), run);
  const std::string shared = render_html({analyze(load_run((dir_ / "shared").string()))});
  EXPECT_NE(shared.find("17 measured briefly (0.5 s each, in 5 worker processes, each shared by "
                        "points of one process state), 4 in full"),
            std::string::npos);
  const std::string plain = render_html({analyze(load_run((dir_ / "laptop").string()))});
  EXPECT_EQ(plain.find("Smart search"), std::string::npos) << "a journal without a search says nothing";
}

TEST_F(HtmlReportTest, StringsFromTheJournalAreEscapedInTextAndInScripts) {
  const std::string html = render_html({analyze(load_run((dir_ / kHostileLabel).string()))});
  EXPECT_EQ(html.find(kHostileLabel), std::string::npos);
  EXPECT_NE(html.find("server&lt;!--&lt;script&gt;x&amp;amp;"), std::string::npos);
  EXPECT_NE(html.find("server\\u003c!--\\u003cscript\\u003ex\\u0026amp;"),
            std::string::npos);
}

TEST_F(HtmlReportTest, EveryPlotDrawsEveryPointInHeadlessChromiumWithoutErrors) {
  const std::vector<RunAnalysis> runs = {analyze(load_run((dir_ / "laptop").string())),
                                         analyze(load_run((dir_ / kHostileLabel).string()))};
  for (const bool several : {false, true}) {
    const std::vector<RunAnalysis> shown =
        several ? runs : std::vector<RunAnalysis>{runs.front()};
    const fs::path page = dir_ / (several ? "two.html" : "one.html");
    std::ofstream(page) << render_html(shown);
    fs::create_directories("test-artifacts");
    const fs::path shot = fs::absolute(fs::path("test-artifacts") /
                                       (several ? "report-two-runs.png" : "report.png"));
    const nlohmann::json status = render_in_chromium(page, shot);
    ASSERT_TRUE(status.is_object()) << "the page never finished drawing";
    EXPECT_TRUE(status.at("done").get<bool>());
    EXPECT_TRUE(status.at("errors").empty()) << status.at("errors").dump();
    const auto panels = report_panels(shown);
    for (const auto& p : panels) {
      ASSERT_TRUE(status.at("marks").contains(p.id)) << p.id << " was not drawn";
      for (const auto& [type, count] : p.expected_marks)
        EXPECT_EQ(status.at("marks").at(p.id).value(type, -1), count)
            << p.id << " " << type << ": " << status.at("marks").at(p.id).dump();
    }
    EXPECT_TRUE(fs::exists(shot) && fs::file_size(shot) > 10'000) << shot;
  }
}

}  // namespace
}  // namespace torchperf

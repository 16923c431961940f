// `torchperf tune` run as a user would: the summary, JSON, the kill -9 and resume cycle, and one
// clear line with its own exit code for each bad input.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>

#include <torch/serialize.h>

#include "support/test_support.h"
#include "test_paths.h"

namespace torchperf {
namespace {

using testing::CliRun;
using testing::run_cli;

// A built-in comes in both forms: runtime=cpp keeps these tunes in the C++ worker.
const char* kSpace =
    "runtime=cpp;batch=2;mode=eval;graph=eager;threads=1;grad=on,no_grad,inference;precision=fp32";
// Twice the points: a stop sent a few seconds in lands in the sweep, not after it.
const char* kLongerSpace =
    "runtime=cpp;batch=2,4;mode=eval;graph=eager;threads=1;grad=on,no_grad,inference;"
    "precision=fp32";

class TuneCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("torchperf-tunecli-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string out() const { return (dir_ / "run").string(); }
  // One point of builtin:mlp, exhaustively, briefly: a journal to resume or damage.
  CliRun tune_one_point() {
    return run_cli({"tune", "builtin:mlp", "--space",
                    "runtime=cpp;batch=2;mode=eval;graph=eager;threads=1;grad=no_grad;precision=fp32",
                    "--time", "0.1", "--leaders", "1", "--search", "exhaustive", "--out", out(),
                    "--quiet"});
  }
  std::map<std::string, int> point_counts() const {
    std::map<std::string, int> counts;
    std::ifstream in(out() + "/results.jsonl");
    std::string line;
    while (std::getline(in, line)) {
      try {
        const auto j = nlohmann::json::parse(line);
        // A smart search measures a finalist twice: briefly, then in full.
        if (j.value("record", "") == "point")
          ++counts[j["key"].get<std::string>() + (j.value("brief", false) ? " (brief)" : "")];
      } catch (const nlohmann::json::exception&) {
      }
    }
    return counts;
  }
  // A tune of kSpace in a child process (stderr to err_path), once its first point is journaled.
  pid_t start_tune_and_wait_for_a_point(const std::string& err_path, const char* space = kSpace) {
    std::filesystem::create_directories(dir_);
    const pid_t pid = fork();
    if (pid == 0) {
      freopen("/dev/null", "w", stdout);
      freopen(err_path.c_str(), "w", stderr);
      execl(TORCHPERF_TEST_CLI, TORCHPERF_TEST_CLI, "tune", "builtin:mlp", "--space", space,
            "--time", "0.3", "--out", out().c_str(), "--quiet", "--budget", "0", nullptr);
      _exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (pid > 0 && point_counts().empty() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return pid;
  }
  std::filesystem::path dir_;
};

void expect_one_line_error(const CliRun& run, int code, const std::string& piece) {
  EXPECT_EQ(run.exit_code, code) << run.err;
  EXPECT_EQ(run.err.rfind("torchperf: error: ", 0), 0u) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_NE(run.err.find(piece), std::string::npos) << piece << " in " << run.err;
}

}  // namespace

TEST_F(TuneCommandTest, PrintsTheWinnerItsEvidenceAndWhereTheResultsAre) {
  const CliRun run = run_cli({"tune", "builtin:mlp", "--space", kSpace, "--time", "0.1", "--out",
                              out(), "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // The winner may be the careful configuration itself (then it says so instead).
  EXPECT_TRUE(run.out.find("speedup over careful") != std::string::npos ||
              run.out.find("configuration itself") != std::string::npos)
      << run.out;
  for (const char* text : {"WINNER", "careful (", "top 3", "per-point overhead", "results: "})
    EXPECT_NE(run.out.find(text), std::string::npos) << text << "\n" << run.out;
  EXPECT_EQ(point_counts().size(), 3u);
  // The sweep ends by writing its report and the winner's configuration file.
  EXPECT_NE(run.err.find("tune: report written to " + out() + "/report.html"), std::string::npos)
      << run.err;
  EXPECT_TRUE(std::filesystem::exists(out() + "/report.html"));
  EXPECT_TRUE(std::filesystem::exists(out() + "/winner.json"));
}

TEST_F(TuneCommandTest, ACalibrationFileNoInt8PointUsedIsSaidUnused) {
  std::filesystem::create_directories(dir_);
  const std::string samples = (dir_ / "calibration.pt").string();
  const auto bytes = torch::pickle_save(c10::ivalue::Tuple::create({at::rand({6, 784})}));
  std::ofstream(samples, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  const CliRun run = run_cli({"tune", "builtin:mlp", "--space",
                              "runtime=cpp;batch=2;mode=eval;graph=eager;threads=1;grad=no_grad;"
                              "precision=fp32",
                              "--time", "0.1", "--leaders", "1", "--search", "exhaustive",
                              "--calibration", samples, "--out", out(), "--json", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto notes = nlohmann::json::parse(run.out).at("notes").dump();
  EXPECT_NE(notes.find("--calibration " + samples + " was not used: no precision=int8-static "
                       "point was measured"),
            std::string::npos)
      << notes;
}

TEST_F(TuneCommandTest, TheWinnerIsMeasuredHeadToHeadAgainstTheModelAsGivenAtItsBatch) {
  const CliRun run =
      run_cli({"tune", "builtin:mlp", "--space", kSpace, "--time", "0.1", "--out", out(),
               "--as-given", "mode=train,grad=on", "--quiet", "--json", "--progress-lines"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  // Resolved at the winner's batch: the comparison is per sample at the batch that won.
  EXPECT_NE(j.at("as_given").get<std::string>().find("batch=2"), std::string::npos) << j.dump();
  EXPECT_NE(j.at("as_given").get<std::string>().find("mode=train"), std::string::npos);
  const auto& h = j.at("vs_as_given");
  ASSERT_TRUE(h.is_object()) << j.dump();  // mode=train is outside the space: never the winner
  EXPECT_EQ(h.at("a"), j.at("winner"));
  EXPECT_EQ(h.at("b"), j.at("as_given"));
  EXPECT_LE(h.at("ci").at(0).get<double>(), h.at("ratio").get<double>());
  EXPECT_GE(h.at("ci").at(1).get<double>(), h.at("ratio").get<double>());
  // The experiment keeps it: a resume compares against the same configuration.
  std::ifstream journal(out() + "/results.jsonl");
  const std::string text((std::istreambuf_iterator<char>(journal)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"as_given\":\"mode=train,grad=on\""),
            std::string::npos);
  // Progress for tools: a JSON line per point or phase on stderr.
  EXPECT_NE(run.err.find("{\"progress\":{"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("\"phase\":\"confirming\""), std::string::npos) << run.err;
  // Issue 84's probe: the bar's last "best" was a brief point's; the last line is the crowned
  // winner's own figure.
  const auto last = run.err.rfind("{\"progress\":{");
  ASSERT_NE(last, std::string::npos);
  const auto line = nlohmann::json::parse(run.err.substr(last, run.err.find('\n', last) - last));
  EXPECT_EQ(line.at("progress").at("phase"), "crowned") << line.dump();
  double figure = 0;
  for (const auto& p : j.at("points"))
    if (p.at("key") == j.at("winner")) figure = p.at("metrics").at("throughput_samples_per_s");
  EXPECT_EQ(line.at("progress").at("best"), fmt::format("{:.4g} samples/s", figure)) << line.dump();
}

TEST_F(TuneCommandTest, KilledWithSigkillMidSweepAndResumedEveryPointIsInTheJournalOnce) {
  const pid_t pid = start_tune_and_wait_for_a_point("/dev/null");
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the sweep finished before it could be killed";
  const std::size_t before = point_counts().size();
  ASSERT_GE(before, 1u);
  ASSERT_LT(before, 3u);

  const CliRun run = run_cli({"tune", "--resume", out(), "--quiet", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["resumed_points"].get<std::size_t>(), before);
  EXPECT_EQ(j["points"].size(), 3u);
  const auto counts = point_counts();
  EXPECT_EQ(counts.size(), 3u);
  for (const auto& [key, n] : counts) EXPECT_EQ(n, 1) << key;
}

TEST_F(TuneCommandTest, ASecondTuneOnARunningFolderIsRefusedAndSigtermKeepsTheJournalWhole) {
  const std::string err_log = (dir_ / "first.err").string();
  const pid_t first = start_tune_and_wait_for_a_point(err_log, kLongerSpace);
  ASSERT_GT(first, 0);
  ASSERT_GE(point_counts().size(), 1u);

  // A second writer, fresh or resuming, is refused at once and names the first.
  const std::string holder = "in use by another tune (PID " + std::to_string(first) + ")";
  expect_one_line_error(run_cli({"tune", "--resume", out(), "--quiet"}), 2, holder);
  expect_one_line_error(run_cli({"tune", "builtin:mlp", "--space", kLongerSpace, "--out", out(),
                                 "--quiet"}),
                        2, holder);
  // A reader is welcome, and told the run is still going.
  const CliRun report = run_cli({"report", out(), "--json"});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.err.find("is still being written by tune (PID " + std::to_string(first)),
            std::string::npos)
      << report.err;

  // SIGTERM (timeout, systemd, Slurm): the workers stop, the journal stays whole, the way on is
  // printed, and the exit code is 143.
  ASSERT_EQ(kill(first, SIGTERM), 0);
  int status = 0;
  waitpid(first, &status, 0);
  std::ifstream in(err_log);
  const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) GTEST_SKIP() << "finished before SIGTERM";
  ASSERT_TRUE(WIFEXITED(status)) << "killed by the signal instead of stopping";
  EXPECT_EQ(WEXITSTATUS(status), 143) << err;
  EXPECT_NE(err.find("continue with --resume " + out()), std::string::npos) << err;
  for (const auto& [key, n] : point_counts()) EXPECT_EQ(n, 1) << key;

  const CliRun resumed = run_cli({"tune", "--resume", out(), "--quiet", "--json"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto counts = point_counts();
  EXPECT_GE(counts.size(), nlohmann::json::parse(resumed.out)["points"].size());
  for (const auto& [key, n] : counts) EXPECT_EQ(n, 1) << key;
}

TEST_F(TuneCommandTest, InputsFromAFileAreSweptAtTheFilesBatchAndThePlanIsSaidUpFront) {
  const CliRun run = run_cli(
      {"tune", testing::fixture("resnet18_scripted.pt"), "--inputs-file",
       testing::fixture("inputs_image.pt"), "--space",
       "mode=eval;grad=no_grad,inference;threads=1;precision=fp32;format=contiguous;graph=eager",
       "--time", "0.1", "--leaders", "1", "--out", out()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("tune: smart search: the space has 2 point(s), each measured once in full"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.out.find("WINNER"), std::string::npos) << run.out;
  EXPECT_TRUE(std::filesystem::exists(out() + "/reference/batch-file.pt"));
}

TEST_F(TuneCommandTest, BadInputsGetOneLineAndTheirOwnExitCode) {
  expect_one_line_error(
      run_cli({"tune", "builtin:mlp", "--space", "speed=max", "--out", out(), "--quiet"}), 2,
      "unknown knob 'speed'");
  expect_one_line_error(
      run_cli({"tune", "builtin:mlp", "--budget", "soon", "--out", out(), "--quiet"}), 2,
      "--budget");
  expect_one_line_error(run_cli({"tune", "--resume", out(), "--quiet"}), 6, "no journal");
  expect_one_line_error(
      run_cli({"tune", "builtin:mlp", "--search", "greedy", "--out", out(), "--quiet"}), 2,
      "--search 'greedy': expected smart or exhaustive");
  expect_one_line_error(run_cli({"tune", "--quiet"}), 2, "expected a model");
  expect_one_line_error(
      run_cli({"tune", "builtin:mlp", "--as-given", "warp=9", "--out", out(), "--quiet"}), 2,
      "--as-given 'warp=9'");
  expect_one_line_error(run_cli({"tune", "--resume", out(), "--out", "/tmp/elsewhere", "--quiet"}),
                        2, "differ");
  expect_one_line_error(
      run_cli({"tune", testing::fixture("truncated.pt"), "--input", "3x224x224", "--out", out(),
               "--quiet"}),
      4, "truncated.pt");
}

TEST_F(TuneCommandTest, AForeignJournalIsRefusedWhenResuming) {
  ASSERT_EQ(tune_one_point().exit_code, 0);
  expect_one_line_error(run_cli({"tune", "builtin:convbn", "--resume", out(), "--quiet"}), 2,
                        "another experiment");
  // An exhaustive sweep goes on as it began, or not at all.
  expect_one_line_error(run_cli({"tune", "--resume", out(), "--search", "smart", "--quiet"}), 2,
                        "search \"exhaustive\" there, \"smart\" here");
  expect_one_line_error(run_cli({"tune", "builtin:mlp", "--out", out(), "--quiet"}), 2,
                        "already holds a journal");
}

TEST_F(TuneCommandTest, APointWithAFieldOfTheWrongTypeIsNamedByLineByResumeAndReport) {
  ASSERT_EQ(tune_one_point().exit_code, 0);
  // The first point's score becomes a string, and its session number too on another line.
  const std::string journal = out() + "/results.jsonl";
  std::vector<std::string> lines;
  {
    std::ifstream in(journal);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  std::size_t damaged = 0;
  for (std::size_t i = 0; i < lines.size() && !damaged; ++i) {
    auto record = nlohmann::json::parse(lines[i]);
    if (record.value("record", "") != "point") continue;
    record["score"] = "fast";
    lines[i] = record.dump();
    damaged = i + 1;
  }
  ASSERT_GT(damaged, 0u);
  {
    std::ofstream o(journal, std::ios::trunc);
    for (const auto& line : lines) o << line << "\n";
  }
  const std::string where = "line " + std::to_string(damaged);
  const CliRun resumed = run_cli({"tune", "--resume", out(), "--quiet"});
  expect_one_line_error(resumed, 6, where + ": a damaged point record (field 'score': expected "
                                            "number, got \"fast\")");
  EXPECT_EQ(resumed.err.find("json.exception"), std::string::npos) << resumed.err;
  expect_one_line_error(run_cli({"report", out()}), 6, where);
}

TEST_F(TuneCommandTest, AThirtySecondBudgetAnswersWithItsBestPointAndOneLineNotes) {
  const CliRun run = run_cli({"tune", "builtin:mlp", "--budget", "30s", "--out", out(), "--quiet",
                              "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  ASSERT_TRUE(j.at("winner").is_string()) << j.at("winner_note");
  EXPECT_GE(j.at("points").size(), 2u);
  for (const auto& note : j.at("notes"))
    EXPECT_EQ(note.get<std::string>().find('\n'), std::string::npos) << note;
  EXPECT_EQ(j.at("winner_note").get<std::string>().find('\n'), std::string::npos);
}

TEST_F(TuneCommandTest, ABusyMachineIsSaidAndNoThreadCountAboveTheCoresLeftFreeIsCrowned) {
  std::filesystem::create_directories(dir_);
  const std::string pid_file = (dir_ / "busy.pid").string();
  // A busy loop in another process (orphaned by the shell: not torchperf's), for the run's length.
  ASSERT_EQ(std::system(("sh -c '(timeout 120 sh -c \"echo \\$\\$ > " + pid_file +
                         "; while :; do :; done\") >/dev/null 2>&1 &'")
                            .c_str()),
            0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const CliRun run = run_cli(
      {"tune", "builtin:mlp", "--space",
       "runtime=cpp;batch=8;mode=eval;graph=eager;precision=fp32;grad=inference;threads=1,2",
       "--time", "0.2", "--search", "exhaustive", "--out", out(), "--quiet", "--json"});
  std::ifstream pid_in(pid_file);
  pid_t busy = 0;
  if (pid_in >> busy && busy > 1) ::kill(busy, SIGKILL);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  const auto& load = j.at("machine_load");
  ASSERT_TRUE(load.is_object()) << j.dump();
  EXPECT_TRUE(load.at("busy").get<bool>()) << load.dump();
  bool said = false;
  for (const auto& note : j.at("notes"))
    said = said || note.get<std::string>().rfind("a busy machine", 0) == 0;
  EXPECT_TRUE(said) << j.at("notes").dump();
  const std::string winner = j.at("winner").get<std::string>();
  const auto at = winner.find("threads=");
  ASSERT_NE(at, std::string::npos) << winner;
  EXPECT_LE(std::stoi(winner.substr(at + 8)), load.at("free_cores").get<int>()) << winner;
}

TEST_F(TuneCommandTest, AProgramWithAStaticBatchIsTunedAtItsOwnBatchWithoutNamingIt) {
  // The batch is the program's: the winner is compared with careful at it, not at batch 1.
  const CliRun run = run_cli({"tune", testing::fixture("exported.pt2"), "--space",
                              "runtime=python;threads=1;precision=fp32;grad=on,inference",
                              "--time", "0.2", "--search", "exhaustive", "--out", out(), "--quiet",
                              "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_NE(j.at("winner").get<std::string>().find("batch=2"), std::string::npos) << j.at("winner");
  EXPECT_NE(j.at("careful").get<std::string>().find("batch=2"), std::string::npos) << j.at("careful");
}

}  // namespace torchperf

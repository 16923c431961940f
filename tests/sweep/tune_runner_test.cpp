// A real sweep on a built-in model, each point in a real worker process (the fault-injecting test
// build): crashes, hangs, memory blow-ups and guard failures cost their points only; the journal
// holds each point once across resumes; a foreign journal is refused.
#include "torchperf/sweep/tune_runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "support/test_support.h"
#include "test_paths.h"
#include "torchperf/error.h"
#include "torchperf/sweep/journal.h"

namespace torchperf {
namespace {

class TuneRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("torchperf-tune-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    ::setenv("TORCHPERF_TEST_FAULT",
             "crash@threads=2+grad=no_grad+precision=fp32;"
             "hang@threads=2+grad=inference+precision=fp32;"
             "oom@threads=2+grad=no_grad+precision=bf16",
             1);
  }
  void TearDown() override {
    ::unsetenv("TORCHPERF_TEST_FAULT");
    std::filesystem::remove_all(dir_);
  }

  TuneOptions options() const {
    TuneOptions o;
    o.workload.model = "builtin:mlp";
    o.workload.time_s = 0.1;
    // A built-in comes in both forms: runtime=cpp keeps these tunes in the C++ worker.
    o.space = parse_space(
        "runtime=cpp;batch=4;mode=eval;graph=eager;threads=1,2;grad=no_grad,inference;"
        "precision=fp32,bf16");
    o.guard = AccuracyGuard::parse("max_abs<=1e-4");  // bf16 cannot pass it
    o.point_timeout_s = 10;  // the hang costs this; a sanitizer build starts workers slowly
    o.memory_cap_bytes = 2048LL << 20;
    o.budget_s = 0;
    o.search = SearchKind::kExhaustive;  // what each point's worker does, every point run
    o.out_dir = dir_.string();
    o.worker_executable = TORCHPERF_TEST_FAULTY_WORKER;
    return o;
  }

  std::map<std::string, int> journal_point_counts() const {
    std::map<std::string, int> counts;
    for (const auto& r : Journal::read((dir_ / "results.jsonl").string()))
      if (r.value("record", "") == "point") ++counts[r["key"].get<std::string>()];
    return counts;
  }

  std::filesystem::path dir_;
};

const PointResult* with_status(const TuneResult& r, const std::string& kind) {
  for (const auto& p : r.points)
    if (p.failure.name() == kind) return &p;
  return nullptr;
}

}  // namespace

TEST(DecideWinnerTest, TheLeaderWinsWhenItBeatsEveryRunnerUpSignificantly) {
  const auto d = decide_winner(
      {"a", "b", "c"},
      {{"a", "b", 1.2, 1.1, 1.3, 20, Verdict::kFaster, ""},
       {"a", "c", 1.5, 1.4, 1.6, 20, Verdict::kFaster, ""}},
      [](const std::string&) { return 1; }, [](const std::string&) { return 1.0; });
  EXPECT_EQ(d.winner, "a");
  EXPECT_FALSE(d.tie);
  EXPECT_NE(d.note.find("significant"), std::string::npos);
}

TEST(DecideWinnerTest, ARunnerUpThatBeatsTheLeaderHeadToHeadWins) {
  const auto d = decide_winner(
      {"a", "b", "c"},
      {{"a", "b", 0.95, 0.93, 0.97, 20, Verdict::kSlower, ""},
       {"a", "c", 0.90, 0.88, 0.92, 20, Verdict::kSlower, ""}},
      [](const std::string&) { return 1; }, [](const std::string&) { return 1.0; });
  EXPECT_EQ(d.winner, "c") << "the larger margin";
  EXPECT_NE(d.note.find("beat the sweep's leader a"), std::string::npos) << d.note;
}

TEST(DecideWinnerTest, ATieNamesTheSimplestThenTheMostAccurate) {
  const std::map<std::string, int> changes = {{"a", 3}, {"b", 2}, {"c", 2}};
  const std::map<std::string, double> cosine = {{"a", 1.0}, {"b", 0.9995}, {"c", 1.0}};
  const auto d = decide_winner(
      {"a", "b", "c"},
      {{"a", "b", 1.01, 0.99, 1.03, 20, Verdict::kIndistinguishable, ""},
       {"a", "c", 1.0, 0.0, 0.0, 3, Verdict::kUndetermined, ""}},
      [&](const std::string& k) { return changes.at(k); },
      [&](const std::string& k) { return cosine.at(k); });
  EXPECT_TRUE(d.tie);
  EXPECT_EQ(d.tied.size(), 3u);
  EXPECT_EQ(d.winner, "c");
}

TEST(DecideWinnerTest, ATieBetweenBatchSizesNamesTheSmallerBatchBeforeTheMostAccurate) {
  // The same throughput at batch 8 answers sooner and holds less memory than at batch 32.
  const std::map<std::string, long long> batch = {{"a", 32}, {"b", 8}};
  const std::map<std::string, double> cosine = {{"a", 1.0}, {"b", 0.9999}};
  const auto d = decide_winner(
      {"a", "b"}, {{"a", "b", 1.03, 0.99, 1.08, 17, Verdict::kIndistinguishable, ""}},
      [](const std::string&) { return 1; }, [&](const std::string& k) { return cosine.at(k); },
      [&](const std::string& k) { return batch.at(k); });
  EXPECT_TRUE(d.tie);
  EXPECT_EQ(d.winner, "b");
  EXPECT_NE(d.note.find("smaller batch"), std::string::npos) << d.note;
}

TEST(DecideWinnerTest, FailedComparisonsLeaveTheLeaderUnconfirmed) {
  const auto d = decide_winner(
      {"a", "b"}, {{"a", "b", 0, 0, 0, 0, Verdict::kUndetermined, "worker crashed"}},
      [](const std::string&) { return 1; }, [](const std::string&) { return 1.0; });
  EXPECT_EQ(d.winner, "a");
  EXPECT_NE(d.note.find("unconfirmed"), std::string::npos);
  EXPECT_TRUE(decide_winner({}, {}, nullptr, nullptr).winner.empty());
}

TEST(LoadedPairTest, AHeadToHeadWhoseRoundsSawLoadComeAndGoIsMeasuredOnceMoreAndSaid) {
  RoundLoad varied;
  varied.windows = 8;
  varied.busy_windows = 3;
  varied.max_cores = 1.04;
  const LoadedPair first = after_varied_load(varied, "winner vs careful", 0, true);
  EXPECT_TRUE(first.again);
  EXPECT_EQ(first.note,
            "the head-to-head winner vs careful saw other work come and go (3 of 8 windows of its "
            "rounds had half a core or more taken, up to 1.0): measured again");
  const LoadedPair second = after_varied_load(varied, "winner vs careful", 1, true);
  EXPECT_FALSE(second.again) << "once more at most";
  EXPECT_NE(second.note.find("again: its ratio mixes a busy and a quiet machine"),
            std::string::npos)
      << second.note;
  const LoadedPair no_room = after_varied_load(varied, "winner vs careful", 0, false);
  EXPECT_FALSE(no_room.again);
  EXPECT_NE(no_room.note.find("the budget left no room to measure it again"), std::string::npos);
  // Steady load, busy or quiet, or none read (a cluster node without /proc): nothing to say.
  RoundLoad steady;
  steady.windows = 8;
  steady.busy_windows = 8;
  for (const auto& load : {std::optional<RoundLoad>(steady), std::optional<RoundLoad>()}) {
    const LoadedPair kept = after_varied_load(load, "winner vs careful", 0, true);
    EXPECT_FALSE(kept.again);
    EXPECT_TRUE(kept.note.empty());
  }
}

TEST_F(TuneRunnerTest, FaultsCostTheirPointsOnlyAndAPassingWinnerIsConfirmed) {
  SteadyTimeSource clock;
  const TuneResult r = run_tune(options(), clock);
  ASSERT_EQ(r.points.size(), 8u);
  std::map<std::string, int> statuses;
  for (const auto& p : r.points) ++statuses[to_string(p.status)];
  EXPECT_EQ(statuses["ok"], 2);
  EXPECT_EQ(statuses["guarded"], 3);
  EXPECT_EQ(statuses["failed"], 3);
  ASSERT_TRUE(with_status(r, "crashed"));
  EXPECT_NE(with_status(r, "crashed")->reason.find("SIGABRT"), std::string::npos);
  ASSERT_TRUE(with_status(r, "timed-out"));
  EXPECT_NE(with_status(r, "timed-out")->key.find("threads=2"), std::string::npos);
  ASSERT_TRUE(with_status(r, "out-of-memory"));
  for (const auto& p : r.points)
    if (p.status == PointStatus::kGuarded) {
      EXPECT_NE(p.reason.find("max_abs"), std::string::npos) << p.reason;
    }

  ASSERT_TRUE(r.winner);
  EXPECT_NE(r.winner->find("threads=1"), std::string::npos) << *r.winner;
  EXPECT_NE(r.winner->find("precision=fp32"), std::string::npos) << "guarded points never win";
  ASSERT_EQ(r.confirmation.size(), 1u);
  EXPECT_TRUE(r.confirmation[0].failure.empty()) << r.confirmation[0].failure;
  EXPECT_GT(r.confirmation[0].rounds, 0u);
  ASSERT_TRUE(r.vs_baseline);
  EXPECT_NE(r.vs_baseline->b.find("grad=on"), std::string::npos) << r.vs_baseline->b;
  EXPECT_GT(r.vs_baseline->ratio, 0);
  EXPECT_GT(r.overhead_median_s, 0);

  const auto counts = journal_point_counts();
  EXPECT_EQ(counts.size(), 8u);
  for (const auto& [key, n] : counts) EXPECT_EQ(n, 1) << key;
}

TEST_F(TuneRunnerTest, ResumingSkipsFinishedPointsAndRerunsACutShortOne) {
  SteadyTimeSource clock;
  TuneOptions o = options();
  o.space =
      parse_space("runtime=cpp;batch=4;mode=eval;graph=eager;threads=1;grad=no_grad,inference;"
                  "precision=fp32");
  o.guard = AccuracyGuard::default_guard();
  run_tune(o, clock);
  const std::string path = (dir_ / "results.jsonl").string();
  // Keep the records up to the first point, and half of the second point's line.
  std::ifstream in(path);
  std::string line, kept;
  int points = 0;
  while (std::getline(in, line)) {
    if (line.find("\"record\":\"point\"") != std::string::npos && ++points == 2) {
      kept += line.substr(0, line.size() / 2);
      break;
    }
    kept += line + "\n";
  }
  in.close();
  std::ofstream(path, std::ios::trunc) << kept;

  o.resume = true;
  const TuneResult r = run_tune(o, clock);
  EXPECT_EQ(r.truncated_lines, 1u);
  EXPECT_EQ(r.resumed_points, 1u);
  EXPECT_EQ(r.points.size(), 2u);
  for (const auto& [key, n] : journal_point_counts()) EXPECT_EQ(n, 1) << key;
  EXPECT_EQ(journal_point_counts().size(), 2u);

  // Everything finished: a further resume runs no point again.
  const TuneResult again = run_tune(o, clock);
  EXPECT_EQ(again.resumed_points, 2u);
  EXPECT_EQ(journal_point_counts().size(), 2u);
  for (const auto& [key, n] : journal_point_counts()) EXPECT_EQ(n, 1) << key;
}

TEST_F(TuneRunnerTest, AJournalFromAnotherExperimentIsRefused) {
  SteadyTimeSource clock;
  TuneOptions o = options();
  o.space = parse_space(
      "runtime=cpp;batch=4;mode=eval;graph=eager;threads=1;grad=no_grad;precision=fp32");
  o.leaders = 1;
  run_tune(o, clock);
  o.resume = true;
  o.workload.model = "builtin:convbn";
  try {
    run_tune(o, clock);
    ADD_FAILURE();
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("another experiment"), std::string::npos) << m;
    EXPECT_NE(m.find("builtin:mlp"), std::string::npos) << m;
  }
  o.workload.model = "builtin:mlp";
  o.space = parse_space(
      "runtime=cpp;batch=4;mode=eval;graph=eager;threads=1;grad=inference;precision=fp32");
  try {
    run_tune(o, clock);
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("space"), std::string::npos) << e.what();
  }
  o.resume = false;
  EXPECT_THROW(run_tune(o, clock), UsageError) << "a second run over a journal needs --resume";
}

TEST_F(TuneRunnerTest, ABudgetTooSmallSaysSoAndRunsNothing) {
  SteadyTimeSource clock;
  TuneOptions o = options();
  o.budget_s = 1;
  const TuneResult r = run_tune(o, clock);
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_EQ(r.not_run, 8u);
  EXPECT_FALSE(r.winner);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("single-knob changes run first"), std::string::npos) << r.notes[0];
  // Why there is no winner: the budget, with what a point would have needed; not the guard.
  EXPECT_EQ(r.winner_note.rfind("the budget of 1 s ran out before any point ran: ", 0), 0u)
      << r.winner_note;
  EXPECT_NE(r.winner_note.find("a point takes ~"), std::string::npos) << r.winner_note;
}

TEST_F(TuneRunnerTest, ASmartSearchScreensBrieflyAndMeasuresItsFinalistsAgainInFull) {
  ::unsetenv("TORCHPERF_TEST_FAULT");
  SteadyTimeSource clock;
  TuneOptions o = options();
  o.search = SearchKind::kSmart;
  o.workload.time_s = 0.4;
  o.leaders = 2;
  o.guard = AccuracyGuard::parse("none");
  // One thread: on a machine busy with other tests, points above the cores left free are not
  // crowned, and the leaders would be what remains, measured briefly (the busy rule, not the
  // search's stages, which this test is about).
  o.space = parse_space(
      "runtime=cpp;batch=4,8;mode=eval;graph=eager;threads=1;grad=no_grad,inference;"
      "precision=fp32,bf16");
  const TuneResult r = run_tune(o, clock);
  EXPECT_EQ(r.search, SearchKind::kSmart);
  EXPECT_DOUBLE_EQ(r.brief_time_s, 0.2);
  EXPECT_NE(r.search_spent.find("screen"), std::string::npos) << r.search_spent;
  EXPECT_GE(r.full_points, 1u);
  // The journal: a point once briefly, and a finalist again in full, after its brief record.
  std::map<std::string, std::vector<bool>> briefs;
  for (const auto& rec : Journal::read((dir_ / "results.jsonl").string()))
    if (rec.value("record", "") == "point") {
      briefs[rec.at("key")].push_back(rec.at("brief").get<bool>());
      EXPECT_DOUBLE_EQ(rec.at("time_s").get<double>(), rec.at("brief").get<bool>() ? 0.2 : 0.4);
      // Brief points share workers; a full one, which decides, has a process of its own.
      EXPECT_EQ(rec.at("shared_worker").get<bool>(), rec.at("brief").get<bool>());
    }
  EXPECT_GE(r.brief_workers, 1u);
  EXPECT_LT(r.brief_workers, r.brief_points) << "points of one process state share a worker";
  for (const auto& [key, b] : briefs) {
    EXPECT_TRUE(b == std::vector<bool>{true} || b == (std::vector<bool>{true, false})) << key;
  }
  std::set<std::string> keys;
  for (const auto& p : r.points) EXPECT_TRUE(keys.insert(p.key).second) << "once: " << p.key;
  ASSERT_TRUE(r.winner);
  // Leaders are measured in full, but for a runner-up stopped clearly behind the leader in its
  // brief run: such a point is never a finalist (docs/methodology.md), and the head-to-head pairs
  // it with the winner all the same. On a machine busy with other tests every point but the
  // leader can be stopped so (CI, stop 71).
  for (const auto& leader : r.leaders) {
    for (const auto& p : r.points) {
      if (p.key == leader) {
        EXPECT_TRUE(!p.brief || (leader != r.leaders.front() && p.metrics.stopped_early))
            << "leaders are measured in full: " << leader;
      }
    }
  }
}

TEST_F(TuneRunnerTest, ABudgetTooSmallForTheScreeningSaysWhatItWouldNeed) {
  SteadyTimeSource clock;
  TuneOptions o = options();
  o.search = SearchKind::kSmart;
  o.budget_s = 1;
  const TuneResult r = run_tune(o, clock);
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_EQ(r.points.size(), 0u);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("too small to screen every one-knob change: that needs about"),
            std::string::npos)
      << r.notes[0];
}

TEST_F(TuneRunnerTest, AnUnusableModelIsTheUsersErrorNotAPointFailure) {
  SteadyTimeSource clock;
  TuneOptions o = options();
  o.workload.model = testing::fixture("not_a_model.txt");
  o.workload.input_spec = "784";
  EXPECT_THROW(run_tune(o, clock), ModelError);
}

}  // namespace torchperf

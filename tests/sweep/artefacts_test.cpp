#include "torchperf/sweep/artefacts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "support/test_support.h"
#include "test_paths.h"
#include "torchperf/config/configuration.h"

namespace torchperf {

namespace {

// A program's space across both runtimes, its compiles priced from a cache of its own (empty: no
// package is there, no compile has been seen).
class ArtefactsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = std::filesystem::temp_directory_path() / ("torchperf-artefacts-" + std::to_string(getpid()));
    std::filesystem::remove_all(cache_);
    const char* before = std::getenv("TORCHPERF_CACHE_DIR");
    saved_ = before ? before : "";
    ::setenv("TORCHPERF_CACHE_DIR", cache_.c_str(), 1);
    traits_ = testing::image_program_traits();
    space_ = build_space(traits_, {{"runtime", {"cpp", "python"}},
                                   {"graph", {"aoti", "aoti-max-autotune", "eager", "compile"}},
                                   {"precision", {"fp32"}}});
    workload_.model = testing::fixture("mlp_dynamic.pt2");
  }
  void TearDown() override {
    if (saved_.empty())
      ::unsetenv("TORCHPERF_CACHE_DIR");
    else
      ::setenv("TORCHPERF_CACHE_DIR", saved_.c_str(), 1);
    std::filesystem::remove_all(cache_);
  }
  // The point whose resolved configuration runs `graph`.
  std::size_t point(const std::string& graph) const {
    for (std::size_t i = 0; i < space_.points.size(); ++i)
      if (resolve(space_.points[i].config, traits_).value("graph") == graph) return i;
    ADD_FAILURE() << "no point runs graph=" << graph;
    return 0;
  }
  std::filesystem::path cache_;
  std::string saved_;
  WorkloadTraits traits_;
  Space space_;
  BenchOptions workload_;
};

}  // namespace

TEST_F(ArtefactsTest, EachPointIsPricedByWhatItsRuntimeSaysItNeeds) {
  std::vector<CompiledPackageRecord> kept;
  ArtefactEvents events;
  events.kept = [&](const CompiledPackageRecord& r) { kept.push_back(r); };
  Artefacts artefacts(space_, traits_, workload_, 0, events);
  artefacts.plan();
  EXPECT_TRUE(kept.empty()) << "no package is in an empty cache";
  // Nothing compiled before: guesses, max-autotune's three times the plain one's.
  EXPECT_DOUBLE_EQ(artefacts.compile_estimate_s(point("eager"), false), 0);
  EXPECT_DOUBLE_EQ(artefacts.compile_estimate_s(point("aoti"), false), 60);
  EXPECT_DOUBLE_EQ(artefacts.compile_estimate_s(point("aoti-max-autotune"), false), 180);
  EXPECT_DOUBLE_EQ(artefacts.compile_estimate_s(point("compile"), false), 30);
  EXPECT_TRUE(artefacts.in_python(point("compile")));
  EXPECT_FALSE(artefacts.in_python(point("aoti")));
  EXPECT_TRUE(artefacts.pending(point("aoti")));
  EXPECT_FALSE(artefacts.pending(point("compile"))) << "its worker compiles it";
  EXPECT_NE(artefacts.plan_text().find("AOTInductor packages: 0 of 2 in the cache"),
            std::string::npos)
      << artefacts.plan_text();
  EXPECT_NE(artefacts.plan_text().find("none compiled before (cost guessed)"), std::string::npos);
}

TEST_F(ArtefactsTest, ACompileAPointsWorkerPaidPricesItsModeForThisTuneAndTheNext) {
  {
    Artefacts artefacts(space_, traits_, workload_, 0, {});
    artefacts.plan();
    artefacts.record_worker_compile(point("compile"), 12);
    EXPECT_DOUBLE_EQ(artefacts.compile_estimate_s(point("compile"), false), 0)
        << "this tune's Python worker keeps the graph it compiled";
    EXPECT_DOUBLE_EQ(artefacts.compile_estimate_s(point("eager"), false), 0)
        << "eager compiles nothing, whatever is recorded";
  }
  Artefacts later(space_, traits_, workload_, 0, {});
  later.plan();
  EXPECT_DOUBLE_EQ(later.compile_estimate_s(point("compile"), false), 12);
  EXPECT_NE(later.plan_text().find("1 compiled by earlier tunes"), std::string::npos)
      << later.plan_text();
}

TEST_F(ArtefactsTest, PointsThatDifferOnlyInBatchingOrPaddingShareOneGraphAndItsPrice) {
  WorkloadTraits stream = traits_;
  stream.named_dims = {"S"};
  const Space space = build_space(stream, {{"runtime", {"python"}},
                                           {"graph", {"compile-dynamic"}},
                                           {"padding", {"batch-max", "buckets:48/96/450"}},
                                           {"batching", {"arrival", "sorted:256"}}});
  // Each point's knobs but the stream's: its graph.
  const auto graph_of = [&](std::size_t i) {
    auto values = space.points[i].config.values();
    values.erase("padding");
    values.erase("batching");
    return values;
  };
  std::set<std::map<std::string, std::string>> graphs;
  std::vector<std::size_t> sharing;  // the points of point 0's graph
  for (std::size_t i = 0; i < space.points.size(); ++i) {
    graphs.insert(graph_of(i));
    if (graph_of(i) == graph_of(0)) sharing.push_back(i);
  }
  ASSERT_EQ(sharing.size(), 4u) << "two paddings by two batchings";
  Artefacts artefacts(space, stream, workload_, 0, {});
  artefacts.plan();
  EXPECT_NE(artefacts.plan_text().find(std::to_string(space.points.size()) + " point(s) over " +
                                       std::to_string(graphs.size()) +
                                       " graph(s) compile in their worker"),
            std::string::npos)
      << artefacts.plan_text();
  artefacts.record_worker_compile(0, 11);
  for (const std::size_t i : sharing) {
    EXPECT_DOUBLE_EQ(artefacts.compile_estimate_s(i, false), 0)
        << "a full point takes the worker of its state from the pool, which holds the graph";
    EXPECT_DOUBLE_EQ(artefacts.compile_estimate_s(i, true), 0)
        << "a brief point's shared worker holds the graph point 0 compiled";
  }
  for (std::size_t i = 0; i < space.points.size(); ++i)
    if (graph_of(i) != graph_of(0)) {
      EXPECT_DOUBLE_EQ(artefacts.compile_estimate_s(i, false), 11)
          << "another graph compiles: priced from the mode's history";
    }
}

TEST_F(ArtefactsTest, AComparisonSideWhosePackageTheBudgetCannotPayIsNotCompiled) {
  Artefacts artefacts(space_, traits_, workload_, 0, {});
  artefacts.plan();
  std::string why;
  EXPECT_FALSE(artefacts.side_ready(space_.points[point("aoti")].config, 10, why));
  EXPECT_NE(why.find("is not compiled: about 60 s, and 10 s of the budget is left"),
            std::string::npos)
      << why;
  EXPECT_TRUE(artefacts.side_ready(space_.points[point("eager")].config, 10, why));
  EXPECT_TRUE(artefacts.side_ready(Configuration::parse("threads=999"), 10, why))
      << "not a configuration of this space: the comparison says what is wrong with it";
}

}  // namespace torchperf

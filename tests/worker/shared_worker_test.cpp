// Brief points in a shared worker, against the real (fault-injecting) worker binary: points of one
// process state share a process, a change of process state starts a new one, and a crash costs
// its point only.
#include "torchperf/worker/shared_worker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "test_paths.h"
#include "torchperf/worker/worker.h"

namespace torchperf {
namespace {

class SharedWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("torchperf-sw-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    ::setenv("TORCHPERF_TEST_FAULT", "crash@threads=2+grad=no_grad", 1);
  }
  void TearDown() override {
    ::unsetenv("TORCHPERF_TEST_FAULT");
    std::filesystem::remove_all(dir_);
  }
  SharedWorker worker() const {
    WatchLimits limits;
    limits.time_limit_s = 60;
    return SharedWorker(TORCHPERF_TEST_FAULTY_WORKER, dir_.string(), limits, nullptr);
  }
  static nlohmann::json request(const std::string& config,
                                const std::string& model = "builtin:mlp") {
    BenchOptions o;
    o.model = model;
    o.time_s = 0.1;
    return to_request(MeasureRequest{o, config});
  }
  static WorkerOutcome measure(SharedWorker& w, const std::string& config) {
    return w.measure(request(config), Configuration::parse(config), 60);
  }
  std::filesystem::path dir_;
};

std::string configuration_of(const WorkerOutcome& out) {
  return out.response.at("result").at("measurement").at("configuration").at("string");
}

}  // namespace

TEST_F(SharedWorkerTest, PointsOfOneProcessStateShareAWorkerAndEachIsMeasuredAsItself) {
  SharedWorker w = worker();
  const WorkerOutcome a = measure(w, "threads=1,batch=4,grad=no_grad");
  EXPECT_FALSE(w.reused()) << "the first point starts the worker";
  const WorkerOutcome b = measure(w, "threads=1,batch=2,grad=inference");
  EXPECT_TRUE(w.reused());
  ASSERT_EQ(a.ending, Ending::kAnswered) << a.message;
  ASSERT_EQ(b.ending, Ending::kAnswered) << b.message;
  EXPECT_TRUE(b.response.value("ok", false)) << b.response.dump();
  EXPECT_EQ(w.started(), 1u);
  EXPECT_NE(configuration_of(b).find("batch=2"), std::string::npos) << configuration_of(b);
  EXPECT_EQ(b.response["result"]["measurement"]["batch"], 2);
  EXPECT_GT(b.wall_s, 0);
}

TEST_F(SharedWorkerTest, AChangeOfProcessStateStartsANewWorker) {
  SharedWorker w = worker();
  ASSERT_EQ(measure(w, "threads=1,batch=4").ending, Ending::kAnswered);
  const WorkerOutcome two = measure(w, "threads=2,batch=4");
  ASSERT_EQ(two.ending, Ending::kAnswered) << two.message;
  EXPECT_EQ(w.started(), 2u);
  EXPECT_EQ(two.response["result"]["measurement"]["configuration"]["knobs"]["threads"]["value"],
            "2");
  ASSERT_EQ(measure(w, "threads=1,batch=4").ending, Ending::kAnswered);
  EXPECT_EQ(w.started(), 3u) << "one worker alive at a time";
}

TEST_F(SharedWorkerTest, ACrashCostsItsPointOnlyAndTheNextPointStartsAFreshWorker) {
  SharedWorker w = worker();
  ASSERT_EQ(measure(w, "threads=2,batch=4,grad=inference").ending, Ending::kAnswered);
  const WorkerOutcome crashed = measure(w, "threads=2,batch=4,grad=no_grad");
  EXPECT_EQ(crashed.ending, Ending::kCrashed);
  EXPECT_NE(crashed.message.find("SIGABRT"), std::string::npos) << crashed.message;
  const WorkerOutcome after = measure(w, "threads=2,batch=4,grad=inference");
  ASSERT_EQ(after.ending, Ending::kAnswered) << after.message;
  EXPECT_TRUE(after.response.value("ok", false));
  EXPECT_EQ(w.started(), 2u);
}

TEST_F(SharedWorkerTest, AnAnsweredErrorEndsTheWorkerAndIsReturnedAsAnswered) {
  SharedWorker w = worker();
  const WorkerOutcome bad = w.measure(request("threads=1", (dir_ / "missing.pt").string()),
                                      Configuration::parse("threads=1"), 60);
  ASSERT_EQ(bad.ending, Ending::kAnswered) << bad.message;
  EXPECT_FALSE(bad.response.value("ok", true));
  ASSERT_EQ(measure(w, "threads=1,batch=4").ending, Ending::kAnswered);
  EXPECT_EQ(w.started(), 2u) << "a worker that answered an error is not reused";
}

}  // namespace torchperf

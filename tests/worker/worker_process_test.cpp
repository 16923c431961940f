// The supervisor side of isolation, against real worker processes (the fault-injecting test build
// of the worker): an answer, a crash, a hang and a memory blow-up each end as they should.
#include "torchperf/worker/worker_process.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "test_paths.h"
#include "torchperf/bench/measurement_json.h"
#include "torchperf/config/apply.h"
#include "torchperf/config/knob.h"
#include "torchperf/worker/protocol.h"
#include "torchperf/worker/worker.h"

namespace torchperf {
namespace {

class WorkerProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("torchperf-wp-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    ::setenv("TORCHPERF_TEST_FAULT", "crash@precision=bf16;hang@grad=inference;oom@grad=no_grad", 1);
  }
  void TearDown() override {
    ::unsetenv("TORCHPERF_TEST_FAULT");
    std::filesystem::remove_all(dir_);
  }
  nlohmann::json measure(const std::string& config) {
    BenchOptions o;
    o.model = "builtin:mlp";
    o.time_s = 0.1;
    return to_request(MeasureRequest{o, config});
  }
  std::string log() const { return (dir_ / "worker.log").string(); }
  std::filesystem::path dir_;
};

}  // namespace

TEST_F(WorkerProcessTest, AWorkerAnswersItsJobOnThePipe) {
  const WorkerOutcome out =
      run_worker_process(TORCHPERF_TEST_FAULTY_WORKER, measure("grad=on"), within(60, 0), log());
  ASSERT_EQ(out.ending, Ending::kAnswered) << out.message;
  ASSERT_TRUE(out.response.value("ok", false)) << out.response.dump();
  EXPECT_GT(out.response["result"]["measurement"]["throughput_samples_per_s"].get<double>(), 0);
  EXPECT_GT(out.peak_rss_bytes, 0);
}

TEST_F(WorkerProcessTest, ACrashCostsTheJobOnlyAndIsNamedWithItsSignal) {
  const WorkerOutcome out =
      run_worker_process(TORCHPERF_TEST_FAULTY_WORKER, measure("precision=bf16"), within(60, 0), log());
  EXPECT_EQ(out.ending, Ending::kCrashed);
  EXPECT_NE(out.message.find("SIGABRT"), std::string::npos) << out.message;
}

TEST_F(WorkerProcessTest, AHangIsKilledAtTheTimeLimit) {
  const WorkerOutcome out =
      run_worker_process(TORCHPERF_TEST_FAULTY_WORKER, measure("grad=inference"), within(3, 0), log());
  EXPECT_EQ(out.ending, Ending::kTimedOut);
  EXPECT_NE(out.message.find("3 s point timeout"), std::string::npos) << out.message;
  EXPECT_GE(out.wall_s, 3);
  EXPECT_LT(out.wall_s, 30);
}

TEST_F(WorkerProcessTest, AMemoryBlowUpIsKilledAtTheCap) {
  const std::int64_t cap = 2048LL << 20;
  const WorkerOutcome out =
      run_worker_process(TORCHPERF_TEST_FAULTY_WORKER, measure("grad=no_grad"), within(60, cap), log());
  EXPECT_EQ(out.ending, Ending::kOutOfMemory);
  EXPECT_NE(out.message.find("memory cap of 2048 MiB"), std::string::npos) << out.message;
  EXPECT_GT(out.peak_rss_bytes, cap);
}

TEST_F(WorkerProcessTest, AnInterruptionStopsTheWorker) {
  const WorkerOutcome out = run_worker_process(TORCHPERF_TEST_FAULTY_WORKER,
                                               measure("grad=inference"), within(60, 0), log(),
                                               [](double t) { return t < 1; });
  EXPECT_EQ(out.ending, Ending::kStopped);
}

TEST_F(WorkerProcessTest, AMissingExecutableIsReportedNotThrown) {
  const WorkerOutcome out =
      run_worker_process((dir_ / "nope").string(), measure("grad=on"), within(10, 0), log());
  EXPECT_EQ(out.ending, Ending::kCrashed);
  EXPECT_NE(out.message.find("could not be started"), std::string::npos) << out.message;
}

TEST_F(WorkerProcessTest, AWorkerStartsWithTheEnvironmentItIsGiven) {
  const Applicability here = find_knob("allocator").applies(WorkloadTraits{}, "jemalloc");
  if (!here.applies) GTEST_SKIP() << here.reason;
  // The allocator knob's environment preloads jemalloc; the worker confirms it from inside.
  const Configuration config = Configuration::parse("allocator=jemalloc");
  const WorkerOutcome out = run_worker_process(TORCHPERF_TEST_FAULTY_WORKER,
                                               measure("allocator=jemalloc"), within(60, 0), log(),
                                               nullptr, worker_environment(config));
  ASSERT_EQ(out.ending, Ending::kAnswered) << out.message;
  ASSERT_TRUE(out.response.value("ok", false)) << out.response.dump();
  const auto& process = out.response["result"]["measurement"]["process"];
  EXPECT_NE(process["allocator"].get<std::string>().find("libjemalloc.so.2"), std::string::npos)
      << process.dump();
}

TEST_F(WorkerProcessTest, AVariableSetToEmptyIsUnsetInTheWorker) {
  ::setenv("OMP_WAIT_POLICY", "ACTIVE", 1);
  const WorkerOutcome out =
      run_worker_process(TORCHPERF_TEST_FAULTY_WORKER, measure("omp_wait=passive"), within(60, 0), log(),
                         nullptr, {{"OMP_WAIT_POLICY", ""}});
  ::unsetenv("OMP_WAIT_POLICY");
  ASSERT_EQ(out.ending, Ending::kAnswered) << out.message;
  const std::string message = out.response["error"].value("message", "");
  EXPECT_NE(message.find("omp_wait=passive: the worker sees OMP_WAIT_POLICY=(unset)"),
            std::string::npos)
      << out.response.dump();
}

TEST_F(WorkerProcessTest, APreloadThatFailsFailsItsJobWithTheLoadersMessage) {
  const Applicability here = find_knob("allocator").applies(WorkloadTraits{}, "jemalloc");
  if (!here.applies) GTEST_SKIP() << here.reason;
  // A library folder whose "jemalloc" is not a shared object: the loader refuses to preload it.
  const auto libdir = dir_ / "lib";
  std::filesystem::create_directories(libdir);
  { std::ofstream(libdir / "libjemalloc.so.2") << "not an ELF file\n"; }
  ::setenv("TORCHPERF_LIBDIR", libdir.c_str(), 1);
  const WorkerOutcome out = run_worker_process(
      TORCHPERF_TEST_FAULTY_WORKER, measure("allocator=jemalloc"), within(60, 0), log(), nullptr,
      worker_environment(Configuration::parse("allocator=jemalloc")));
  ::unsetenv("TORCHPERF_LIBDIR");
  ASSERT_EQ(out.ending, Ending::kAnswered) << out.message;
  ASSERT_FALSE(out.response.value("ok", true));
  EXPECT_EQ(out.response["error"]["kind"], "config");
  const std::string message = out.response["error"]["message"];
  EXPECT_NE(message.find("allocator=jemalloc: libjemalloc.so.2 is not loaded in the worker"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("the loader said: ERROR: ld.so: object"), std::string::npos) << message;
}

class WorkerSessionTest : public WorkerProcessTest {
 protected:
  nlohmann::json side(const std::string& config) {
    BenchOptions o;
    o.model = "builtin:mlp";
    o.time_s = 0.1;
    return to_request(SideRequest{o, config});
  }
};

TEST_F(WorkerSessionTest, ASideTimesTheBlocksItIsAskedForAndFinishesItsMeasurement) {
  WorkerSession worker(TORCHPERF_TEST_FAULTY_WORKER, {}, within(60, 0), log());
  const auto ready = worker.ask(side("threads=1,batch=2"), 60);
  ASSERT_TRUE(ready.value("ok", false)) << ready.dump();
  EXPECT_NE(ready["configuration"].get<std::string>().find("threads=1"), std::string::npos);
  SampleSet samples;
  samples.warmup.iterations = 2;
  samples.block_iterations = 3;
  for (int i = 0; i < 2; ++i) {
    const auto t = worker.ask(to_request(BlockRequest{1}), 60);
    ASSERT_GT(t["ns"].get<double>(), 0) << t.dump();
  }
  for (int i = 0; i < 6; ++i) {
    const auto t = worker.ask(to_request(BlockRequest{3}), 60);
    samples.iteration_ns.push_back(t["ns"].get<double>() / 3);
  }
  const auto done = worker.ask(to_request(FinishRequest{samples}), 60);
  ASSERT_TRUE(done.value("ok", false)) << done.dump();
  const Measurement m = measurement_from_json(done["measurement"]);
  EXPECT_EQ(m.configuration.value("threads"), "1");
  EXPECT_EQ(m.samples.iteration_ns, samples.iteration_ns);
  EXPECT_TRUE(m.paired);
  EXPECT_NEAR(m.quality.cosine, 1, 1e-6);
  EXPECT_EQ(m.process.at("allocator"), "glibc");
}

// The state letter of /proc/PID/stat once it settles on `want` (or after a second).
char process_state(pid_t pid, char want) {
  char state = '?';
  for (int i = 0; i < 100 && state != want; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const std::size_t close = text.rfind(')');  // the command name may hold spaces
    if (close != std::string::npos && close + 2 < text.size()) state = text[close + 2];
    if (state != want) ::usleep(10000);
  }
  return state;
}

TEST_F(WorkerSessionTest, APausedWorkerIsStoppedUntilResumedAndStillAnswersAfterwards) {
  WorkerSession worker(TORCHPERF_TEST_FAULTY_WORKER, {}, within(60, 0), log());
  ASSERT_TRUE(worker.ask(side("threads=1,batch=2"), 60).value("ok", false));
  worker.pause();
  EXPECT_EQ(process_state(worker.pid(), 'T'), 'T');
  worker.resume();
  EXPECT_NE(process_state(worker.pid(), 'S'), 'T');
  const auto t = worker.ask(to_request(BlockRequest{1}), 60);
  EXPECT_GT(t["ns"].get<double>(), 0) << t.dump();
  worker.pause();  // a worker left paused is still ended cleanly by the session's end
}

TEST_F(WorkerSessionTest, ASideThatCrashesEndsTheSessionWithItsSignal) {
  WorkerSession worker(TORCHPERF_TEST_FAULTY_WORKER, {}, within(60, 0), log());
  try {
    worker.ask(side("precision=bf16"), 60);
    FAIL() << "the worker should have crashed";
  } catch (const WorkerFailure& e) {
    EXPECT_EQ(e.ending, Ending::kCrashed);
    EXPECT_NE(std::string(e.what()).find("SIGABRT"), std::string::npos) << e.what();
  }
  EXPECT_THROW(worker.ask(to_request(BlockRequest{1}), 60), WorkerFailure);
}

TEST_F(WorkerSessionTest, ASideThatHangsIsKilledAtItsRequestsLimit) {
  WorkerSession worker(TORCHPERF_TEST_FAULTY_WORKER, {}, within(60, 0), log());
  try {
    worker.ask(side("grad=inference"), 2);
    FAIL() << "the worker should have been killed";
  } catch (const WorkerFailure& e) {
    EXPECT_EQ(e.ending, Ending::kTimedOut);
    EXPECT_NE(std::string(e.what()).find("2 s limit"), std::string::npos) << e.what();
  }
}

}  // namespace torchperf

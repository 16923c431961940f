// The worker's jobs served in this process: answers, and errors answered with their kind.
#include "torchperf/sweep/worker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "support/test_support.h"

namespace torchperf {
namespace {

BenchOptions mlp() {
  BenchOptions o;
  o.model = "builtin:mlp";
  o.time_s = 0.1;
  return o;
}

}  // namespace

TEST(WorkerTest, DescribingAWorkloadReturnsItsTraits) {
  const auto r = serve_job({{"job", "describe"}, {"workload", to_json(mlp())}});
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  const WorkloadDescription d = workload_description_from_json(r["description"]);
  EXPECT_EQ(d.model, "builtin:mlp");
  EXPECT_FALSE(d.traits.convolutional);
  EXPECT_TRUE(d.traits.linear);  // the supervisor learns that int8 applies
  EXPECT_EQ(d.inputs, "Float[1,784]");
}

TEST(WorkerTest, AMeasurementUsesTheReferenceFileItIsGiven) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("torchperf-ref-" + std::to_string(getpid()) + ".pt"))
                               .string();
  const auto saved = serve_job(
      {{"job", "reference"}, {"workload", to_json(mlp())}, {"batch", "4"}, {"path", path}});
  ASSERT_TRUE(saved.value("ok", false)) << saved.dump();
  const auto r = serve_job({{"job", "measure"},
                            {"workload", to_json(mlp())},
                            {"configuration", "batch=4,grad=no_grad"},
                            {"references", {{"4", path}}}});
  std::filesystem::remove(path);
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  const auto& m = r["result"]["measurement"];
  EXPECT_EQ(m["batch"], 4);
  EXPECT_DOUBLE_EQ(m["quality"]["cosine"].get<double>(), 1.0);
  EXPECT_GT(m["flops_per_sample"].get<double>(), 0) << "FLOPs travel in the reference file";
}

TEST(WorkerTest, ErrorsAreAnsweredWithTheirKind) {
  BenchOptions missing = mlp();
  missing.model = "/nonexistent/model.pt";
  EXPECT_EQ(serve_job({{"job", "describe"}, {"workload", to_json(missing)}})["error"]["kind"],
            "model");
  EXPECT_EQ(serve_job({{"job", "measure"},
                       {"workload", to_json(mlp())},
                       {"configuration", "precision=fp64"}})["error"]["kind"],
            "config");
  EXPECT_EQ(serve_job({{"job", "teleport"}, {"workload", to_json(mlp())}})["error"]["kind"],
            "usage");
  EXPECT_EQ(serve_job({{"job", "describe"}})["error"]["kind"], "protocol");
  BenchOptions bad_ref = mlp();
  const auto r = serve_job({{"job", "measure"},
                            {"workload", to_json(bad_ref)},
                            {"configuration", ""},
                            {"references", {{"1", "/nonexistent/ref.pt"}}}});
  EXPECT_EQ(r["error"]["kind"], "runtime");
}

TEST(WorkerTest, BenchOptionsAndTraitsSurviveTheWire) {
  BenchOptions o = mlp();
  o.input_spec = "784";
  o.seed = 9;
  const BenchOptions back = bench_options_from_json(to_json(o));
  EXPECT_EQ(back.input_spec, "784");
  EXPECT_EQ(back.seed, 9u);
  WorkloadTraits t;
  t.usable_cores = 7;
  t.saved_training = true;
  t.linear = true;
  t.conv_bias_before_bn = true;
  EXPECT_EQ(to_json(workload_traits_from_json(to_json(t))), to_json(t));
  auto old = to_json(WorkloadTraits{});  // a journal from before these traits
  old.erase("linear");
  old.erase("conv_bias_before_bn");
  EXPECT_FALSE(workload_traits_from_json(old).linear);
}

TEST(WorkerTest, TheWorkerModeReadsARequestAndAnswersOnTheOtherPipe) {
  int in[2], out[2];
  ASSERT_EQ(pipe(in), 0);
  ASSERT_EQ(pipe(out), 0);
  const std::string request =
      nlohmann::json({{"job", "describe"}, {"workload", to_json(mlp())}}).dump() + "\n";
  ASSERT_EQ(write(in[1], request.data(), request.size()), static_cast<ssize_t>(request.size()));
  close(in[1]);
  EXPECT_EQ(run_worker(in[0], out[1]), 0);
  close(out[1]);
  char buf[8192];
  const ssize_t n = read(out[0], buf, sizeof(buf));
  ASSERT_GT(n, 0);
  EXPECT_TRUE(nlohmann::json::parse(std::string(buf, static_cast<std::size_t>(n)))["ok"]);
  close(in[0]);
  close(out[0]);
}

}  // namespace torchperf

// The worker's jobs served in this process: answers, and errors answered with their kind.
#include "torchperf/worker/worker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "support/test_support.h"
#include "torchperf/error.h"

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
  const auto r = serve_job(to_request(DescribeRequest{mlp()}));
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  const WorkloadDescription d = from_reply<DescribeReply>(r, "describe").description;
  EXPECT_EQ(d.model, "builtin:mlp");
  EXPECT_FALSE(d.traits.convolutional);
  EXPECT_TRUE(d.traits.linear);  // the supervisor learns that int8 applies
  EXPECT_EQ(d.inputs, "Float[1,784]");
}

TEST(WorkerTest, AMeasurementUsesTheReferenceFileItIsGiven) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("torchperf-ref-" + std::to_string(getpid()) + ".pt"))
                               .string();
  const auto saved = serve_job(to_request(ReferenceRequest{mlp(), "4", path}));
  ASSERT_TRUE(saved.value("ok", false)) << saved.dump();
  BenchOptions with_reference = mlp();
  with_reference.reference_files = {{"4", path}};
  const auto r = serve_job(to_request(MeasureRequest{with_reference, "batch=4,grad=no_grad"}));
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
  EXPECT_EQ(serve_job(to_request(DescribeRequest{missing}))["error"]["kind"], "model");
  EXPECT_EQ(serve_job(to_request(MeasureRequest{mlp(), "precision=fp64"}))["error"]["kind"],
            "config");
  BenchOptions bad_ref = mlp();
  bad_ref.reference_files = {{"1", "/nonexistent/ref.pt"}};
  EXPECT_EQ(serve_job(to_request(MeasureRequest{bad_ref, ""}))["error"]["kind"], "runtime");
}

TEST(WorkerTest, AFailureWhoseCauseIsMemoryIsAnsweredAsOutOfMemory) {
  const auto kind_of = [](const std::exception_ptr& e) {
    try {
      std::rethrow_exception(e);
    } catch (...) {
      return reply_for_current_exception()["error"]["kind"].get<std::string>();
    }
  };
  // A Python side's out-of-memory, rethrown as a failure naming the worker.
  EXPECT_EQ(kind_of(std::make_exception_ptr(RuntimeFailure(
                "the python side failed: out of memory (CUDA out of memory. Tried to allocate)"))),
            "out-of-memory");
  EXPECT_EQ(kind_of(std::make_exception_ptr(RuntimeFailure("the model failed"))), "runtime");
  EXPECT_EQ(kind_of(std::make_exception_ptr(ResourceLimit("over the cap"))), "out-of-memory");
  EXPECT_EQ(kind_of(std::make_exception_ptr(ResultsError("damaged"))), "results");
}

TEST(WorkerTest, ARequestOfAnotherProtocolVersionOrShapeIsAProtocolErrorThatSaysWhy) {
  auto other = to_request(DescribeRequest{mlp()});
  other["protocol"] = kWorkerProtocolVersion + 1;
  const auto versioned = serve_job(other);
  EXPECT_EQ(versioned["error"]["kind"], "protocol");
  EXPECT_NE(versioned["error"]["message"].get<std::string>().find("different builds"),
            std::string::npos)
      << versioned.dump();
  auto unversioned = to_request(DescribeRequest{mlp()});
  unversioned.erase("protocol");
  EXPECT_EQ(serve_job(unversioned)["error"]["kind"], "protocol");
  auto unknown = to_request(DescribeRequest{mlp()});
  unknown["job"] = "teleport";
  EXPECT_NE(serve_job(unknown)["error"]["message"].get<std::string>().find("'teleport'"),
            std::string::npos);
  auto missing = to_request(MeasureRequest{mlp(), ""});
  missing.erase("configuration");
  const auto r = serve_job(missing);
  EXPECT_EQ(r["error"]["kind"], "protocol");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("no field 'configuration'"),
            std::string::npos)
      << r.dump();
}

TEST(WorkerTest, TheWorkerModeReadsARequestAndAnswersOnTheOtherPipe) {
  int in[2], out[2];
  ASSERT_EQ(pipe(in), 0);
  ASSERT_EQ(pipe(out), 0);
  const std::string request =
      to_request(DescribeRequest{mlp()}).dump() + "\n";
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

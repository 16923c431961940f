// serve and load as a user runs them: real processes, real HTTP on loopback, real signals.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <thread>
#include <tuple>

#include "support/serve_process.h"
#include "support/test_support.h"
#include "test_paths.h"

extern char** environ;

namespace torchperf {
namespace {

using testing::run_cli;
using testing::ServeProcess;

TEST(ServeCommandTest, ServesTheModelAndAnswersTheProtocolsEndpoints) {
  ServeProcess serve({"builtin:mlp", "--max-batch", "4"});
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  EXPECT_NE(serve.first_line().find("serving 'mlp'"), std::string::npos);
  EXPECT_NE(serve.first_line().find("mode=eval"), std::string::npos) << serve.first_line();
  // Issue 62: time to ready, from the kernel's record of the process's start.
  std::smatch ready;
  const std::string first = serve.first_line();
  ASSERT_TRUE(std::regex_search(first, ready, std::regex(R"(ready (\d+\.\d+) s after the process started)")))
      << first;
  EXPECT_GT(std::stod(ready[1].str()), 0.0);
  httplib::Client c("127.0.0.1", serve.port());
  EXPECT_EQ(c.Get("/v2/health/ready")->status, 200);
  const auto meta = nlohmann::json::parse(c.Get("/v2/models/mlp")->body);
  EXPECT_EQ(meta.at("inputs")[0].at("shape"), nlohmann::json::array({-1, 784}));
  nlohmann::json body = {{"inputs",
                          {{{"name", "x"},
                            {"datatype", "FP32"},
                            {"shape", {1, 784}},
                            {"data", std::vector<float>(784, 0.5f)}}}}};
  const auto answer = c.Post("/v2/models/mlp/infer", body.dump(), "application/json");
  ASSERT_EQ(answer->status, 200) << answer->body;
  EXPECT_EQ(nlohmann::json::parse(answer->body).at("outputs")[0].at("shape"),
            nlohmann::json::array({1, 10}));
  EXPECT_NE(c.Get("/metrics")->body.find("torchperf_responses_total{code=\"200\"} 1"),
            std::string::npos);
  // load --dim against a model whose sizes are all fixed: refused, naming the flag.
  const auto load = run_cli({"load", "http://127.0.0.1:" + std::to_string(serve.port()), "--model",
                             "mlp", "--dim", "S=4..64", "--rate", "5", "--duration", "1s", "--quiet"});
  EXPECT_EQ(load.exit_code, 2) << load.err;
  EXPECT_NE(load.err.find("has no dimension that varies past the batch"), std::string::npos)
      << load.err;
  EXPECT_EQ(serve.stop(SIGTERM), 0);
}

TEST(ServeCommandTest, EachBadRequestGetsItsStatusAndAReasonAndNeverA200) {
  ServeProcess serve({"builtin:mlp"});
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  httplib::Client c("127.0.0.1", serve.port());
  const auto input = [](const std::string& name, const std::string& data) {
    return R"({"inputs": [{"name": ")" + name + R"(", "datatype": "FP32", "shape": [1, 784],)" +
           R"( "data": [)" + data + "]}]}";
  };
  std::string zeros = "0";
  for (int i = 1; i < 784; ++i) zeros += ",0";
  struct BadRequest {
    std::string body;
    int status;
    std::string reason;
  };
  const std::vector<BadRequest> table = {
      {input("image", zeros), 400, "input 'image' is not one of the model's inputs (expected x)"},
      {input("x", "1e39" + zeros.substr(1)), 400, "1e+39 overflows FP32"},
      {input("x", zeros.substr(2)), 400, "needs 784 values"},
      {R"({"inputs": [)", 400, "not JSON"},
      {R"({"inputs": []})", 400, "the request has no"},
      {input("x", "\"a\"" + zeros.substr(1)), 400, "expected a number"},
      {"", 400, "not JSON"},
  };
  for (const auto& bad : table) {
    const auto r = c.Post("/v2/models/mlp/infer", bad.body, "application/json");
    ASSERT_TRUE(r) << bad.reason;
    EXPECT_EQ(r->status, bad.status) << bad.reason << ": " << r->body;
    EXPECT_NE(r->body.find(bad.reason), std::string::npos) << r->body;
  }
  // A huge but finite input overflows inside the model: a 500 with the reason, not 200 + nulls.
  std::string huge = "3e38";
  for (int i = 1; i < 784; ++i) huge += ",3e38";
  const auto overflow = c.Post("/v2/models/mlp/infer", input("x", huge), "application/json");
  ASSERT_TRUE(overflow);
  if (overflow->status == 200)
    EXPECT_EQ(overflow->body.find("null"), std::string::npos) << overflow->body;
  else
    EXPECT_NE(overflow->body.find("NaN/Inf"), std::string::npos) << overflow->body;
  EXPECT_EQ(c.Post("/v2/models/mlp/infer", input("x", zeros), "application/json")->status, 200);
  EXPECT_EQ(serve.stop(SIGTERM), 0);
}

TEST(ServeCommandTest, RequestsVaryInANamedLengthUpToItsLongestAndOnePastItGets400) {
  // Issue 52: --dim declares the lengths served; requests merge padded (issue 62), each answer
  // cut back to its own length.
  // Its buckets planned from the --dim: the plan says the share of requests each covers.
  ServeProcess serve({"builtin:encoder", "--input", "int64:S@0..1000;int64:S@1..2", "--dim",
                      "S=4..64", "--max-batch", "4", "--buckets", "plan:3",
                      // Every shape, however slow the build (30 s ran out under the sanitizers).
                      "--shapes-time", "10m"});
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  const std::string plan = serve.line();
  EXPECT_EQ(plan.rfind("bucket plan for S=4..64: ", 0), 0u) << plan;
  EXPECT_NE(plan.find("64 ("), std::string::npos) << plan;
  EXPECT_NE(plan.find("% of tokens padding"), std::string::npos) << plan;
  // The call shapes the lengths bring, prepared before the first request (issue 62, part 3):
  // 61 lengths at 1-4 rows are within the plan's cap, so every call is on the plan.
  const std::string shapes = serve.line();
  EXPECT_EQ(shapes.rfind("shape plan for S=4..64: prepared 244 call shapes in ", 0), 0u) << shapes;
  EXPECT_NE(shapes.find("at 1-4 rows"), std::string::npos) << shapes;
  EXPECT_EQ(shapes.find("left"), std::string::npos) << shapes;
  httplib::Client c("127.0.0.1", serve.port());
  const auto meta = nlohmann::json::parse(c.Get("/v2/models/encoder")->body);
  EXPECT_EQ(meta.at("inputs")[0].at("shape"), nlohmann::json::array({-1, -1}));
  const auto request = [&](int length) {
    const std::vector<std::int64_t> ids(length, 7), mask(length, 1);
    const nlohmann::json body = {
        {"inputs",
         {{{"name", "input_ids"}, {"datatype", "INT64"}, {"shape", {1, length}}, {"data", ids}},
          {{"name", "attention_mask"}, {"datatype", "INT64"}, {"shape", {1, length}}, {"data", mask}}}}};
    return c.Post("/v2/models/encoder/infer", body.dump(), "application/json");
  };
  for (const int length : {5, 64, 17}) {
    const auto answer = request(length);
    ASSERT_TRUE(answer);
    ASSERT_EQ(answer->status, 200) << answer->body;
    // The sequence output keeps the request's own length: nothing was padded.
    EXPECT_EQ(nlohmann::json::parse(answer->body).at("outputs")[0].at("shape"),
              nlohmann::json::array({1, length, 64}));
  }
  const auto past = request(65);
  ASSERT_TRUE(past);
  EXPECT_EQ(past->status, 400);
  EXPECT_NE(past->body.find("size 65 in dimension 1 is past the longest the model is served for, "
                            "64"),
            std::string::npos)
      << past->body;
  // load --dim draws each request's length: every one answered, the latency given by length.
  const std::string url = "http://127.0.0.1:" + std::to_string(serve.port());
  const auto load = run_cli({"load", url, "--model", "encoder", "--dim", "S=lognormal:16:0.8:4..64",
                             "--rate", "20", "--duration", "2s", "--json", "--quiet"});
  ASSERT_EQ(load.exit_code, 0) << load.err;
  const auto summary = nlohmann::json::parse(load.out);
  EXPECT_EQ(summary["ok"], summary["requests"]);
  const auto& by_length = summary["latency_by_length_s"];
  ASSERT_GE(by_length.size(), 2u) << summary.dump();
  EXPECT_GE(by_length.front()["lengths"][0].get<int>(), 4);
  EXPECT_LE(by_length.back()["lengths"][1].get<int>(), 64);
  const std::string metrics = c.Get("/metrics")->body;
  const std::regex off_plan(R"(torchperf_bucket_off_plan_calls_total\{bucket="\d+"\} (\d+))");
  int buckets = 0;
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), off_plan);
       it != std::sregex_iterator(); ++it, ++buckets)
    EXPECT_EQ((*it)[1].str(), "0") << (*it)[0].str();
  EXPECT_EQ(buckets, 3) << metrics;
  // Issue 63: client errors are 400s and 413s naming the input and the limit, never 500s.
  const auto send = [&](std::int64_t rows, std::int64_t ids, std::int64_t mask) {
    const nlohmann::json body = {
        {"inputs",
         {{{"name", "input_ids"}, {"datatype", "INT64"}, {"shape", {rows, ids}},
           {"data", std::vector<std::int64_t>(rows * ids, 7)}},
          {{"name", "attention_mask"}, {"datatype", "INT64"}, {"shape", {rows, mask}},
           {"data", std::vector<std::int64_t>(rows * mask, 1)}}}}};
    return c.Post("/v2/models/encoder/infer", body.dump(), "application/json");
  };
  for (const auto& [rows, ids, mask, status, says] :
       std::vector<std::tuple<int, int, int, int, std::string>>{
           {1, 0, 0, 400, "size 0 in dimension 1 is below the shortest the model is served for, 4"},
           {1, 10, 12, 400, "size 12 in dimension 1 differs from 10 in input 'input_ids'"},
           {33, 8, 8, 413, "33 samples are past the server's --max-client-batch 32"}}) {
    const auto refused = send(rows, ids, mask);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, status) << refused->body;
    EXPECT_NE(refused->body.find(says), std::string::npos) << refused->body;
  }
  // A load whose lengths pass the served MAX fails, saying what the server said.
  const auto longer = run_cli({"load", url, "--model", "encoder", "--dim", "S=4..200", "--rate",
                               "20", "--duration", "1s", "--quiet"});
  EXPECT_EQ(longer.exit_code, 5) << longer.err;
  EXPECT_NE(longer.err.find("load: the server refused"), std::string::npos) << longer.err;
  EXPECT_NE(longer.err.find("past the longest the model is served for, 64"), std::string::npos)
      << longer.err;
  EXPECT_EQ(serve.stop(SIGTERM), 0);
}

TEST(ServeCommandTest, ShapesLazyPreparesNoneAndAShapesValueItCannotReadIsRefusedByName) {
  ServeProcess serve({"builtin:encoder", "--input", "int64:S@0..1000;int64:S@1..2", "--dim",
                      "S=4..64", "--max-batch", "2", "--shapes", "lazy"});
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  // Calls at shapes nobody prepared: each is counted off the plan only where there is a plan.
  httplib::Client c("127.0.0.1", serve.port());
  const std::vector<std::int64_t> ids(9, 7), mask(9, 1);
  const nlohmann::json body = {
      {"inputs",
       {{{"name", "input_ids"}, {"datatype", "INT64"}, {"shape", {1, 9}}, {"data", ids}},
        {{"name", "attention_mask"}, {"datatype", "INT64"}, {"shape", {1, 9}}, {"data", mask}}}}};
  ASSERT_EQ(c.Post("/v2/models/encoder/infer", body.dump(), "application/json")->status, 200);
  EXPECT_NE(c.Get("/metrics")->body.find("torchperf_bucket_off_plan_calls_total{bucket=\"all\"} 0"),
            std::string::npos);
  EXPECT_EQ(serve.stop(SIGTERM), 0);
  std::string rest;
  for (std::string l = serve.line(); !l.empty(); l = serve.line()) rest += l;
  EXPECT_EQ(rest.find("shape plan"), std::string::npos) << rest;
  for (const auto& [flag, value, expected] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--shapes", "all", "--shapes 'all': expected planned, lazy, or the most call shapes"},
           {"--shape-memory", "lots", "--shape-memory: expected a size such as 4G"},
           {"--shapes-time", "soon", "--shapes-time: expected a duration such as 90s"}}) {
    const auto run = run_cli({"serve", "builtin:mlp", "--port", "0", flag, value});
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find(expected), std::string::npos) << run.err;
  }
}

TEST(ServeCommandTest, ARequestWhoseCallWouldHoldMoreMemoryThanACallMayIsRefusedBeforeItRuns) {
  // Issue 63: a request within --max-client-batch and the served MAX whose call would still hold
  // more than the server lets a call hold, by what a call was measured to take at start-up.
  ServeProcess serve({"builtin:encoder", "--input", "int64:S@0..1000;int64:S@1..2", "--dim",
                      "S=4..64", "--max-client-batch", "4096", "--max-call-memory", "16M",
                      "--shapes", "8"});
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  const std::string shapes = serve.line(), memory = serve.line();
  std::smatch most;
  ASSERT_TRUE(std::regex_search(
      memory, most,
      std::regex(R"(^call memory: .* a padded token in the call and .* in its request and )"
                 R"(answer, .* a call \(calls of 2 and 4 rows at )"
                 R"(length 64\); a call may hold 16\.0 MiB \(--max-call-memory 16M\): at most )"
                 R"((\d+) padded tokens a call, a request past it alone gets 413)")))
      << shapes << memory;
  const std::int64_t rows = std::stoll(most[1]) / 64;
  ASSERT_GE(rows, 1) << memory;
  httplib::Client c("127.0.0.1", serve.port());
  const auto send = [&](std::int64_t samples) {
    const std::vector<std::int64_t> ids(samples * 64, 7), mask(samples * 64, 1);
    const nlohmann::json body = {
        {"inputs",
         {{{"name", "input_ids"}, {"datatype", "INT64"}, {"shape", {samples, 64}}, {"data", ids}},
          {{"name", "attention_mask"}, {"datatype", "INT64"}, {"shape", {samples, 64}},
           {"data", mask}}}}};
    return c.Post("/v2/models/encoder/infer", body.dump(), "application/json");
  };
  const auto refused = send(rows + 1);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 413) << refused->body;
  EXPECT_NE(refused->body.find(fmt::format("the request's {} samples of length 64 ({} padded "
                                           "tokens) would hold ~",
                                           rows + 1, (rows + 1) * 64)),
            std::string::npos)
      << refused->body;
  EXPECT_NE(refused->body.find(fmt::format("past the 16.0 MiB a call may hold (--max-call-memory "
                                           "16M), which fits {} padded tokens; send at most {} "
                                           "samples of length 64 a request",
                                           most[1].str(), rows)),
            std::string::npos)
      << refused->body;
  const auto fits = send(rows);
  ASSERT_TRUE(fits);
  EXPECT_EQ(fits->status, 200) << fits->body.substr(0, 300);
  EXPECT_EQ(serve.stop(SIGTERM), 0);
  const auto run = run_cli({"serve", "builtin:mlp", "--port", "0", "--max-call-memory", "lots"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("--max-call-memory 'lots': expected auto, off, or a size such as 512M"),
            std::string::npos)
      << run.err;
}

TEST(ServeCommandTest, RequestsOfManyLengthsShareCallsWithinTheirBucketAndTheMetricsSaySo) {
  // Issue 62: the padding knob's buckets are the queue's; a call is formed from one bucket, padded
  // to its edge, and each answer cut back to its request's length.
  ServeProcess serve({"builtin:encoder", "--input", "int64:S@0..1000;int64:S@1..2", "--dim",
                      "S=4..64", "--config", "padding=buckets:16/64", "--max-batch", "4",
                      "--max-queue-delay", "300ms", "--max-tokens", "256"});
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  EXPECT_NE(serve.first_line().find("lengths queued in buckets 16/64, at most 256 padded tokens"),
            std::string::npos)
      << serve.first_line();
  // The guard at every edge: each bucket's shortest length, alone and padded to its edge.
  EXPECT_NE(serve.first_line().find("padding checked at every bucket edge (S 4 padded to 16, 17 "
                                    "padded to 64)"),
            std::string::npos)
      << serve.first_line();
  const auto request = [port = serve.port()](int samples, int length) {
    httplib::Client c("127.0.0.1", port);
    const std::vector<std::int64_t> ids(samples * length, 7), mask(samples * length, 1);
    const nlohmann::json body = {
        {"inputs",
         {{{"name", "input_ids"}, {"datatype", "INT64"}, {"shape", {samples, length}}, {"data", ids}},
          {{"name", "attention_mask"},
           {"datatype", "INT64"},
           {"shape", {samples, length}},
           {"data", mask}}}}};
    const auto r = c.Post("/v2/models/encoder/infer", body.dump(), "application/json");
    return r ? std::make_pair(r->status, r->body) : std::make_pair(0, std::string());
  };
  std::vector<std::future<std::pair<int, std::string>>> answers;
  for (const int length : {5, 30, 9, 40})
    answers.push_back(std::async(std::launch::async, request, 1, length));
  std::vector<int> lengths = {5, 30, 9, 40};
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const auto [status, body] = answers[i].get();
    ASSERT_EQ(status, 200) << body;
    EXPECT_EQ(nlohmann::json::parse(body).at("outputs")[0].at("shape"),
              nlohmann::json::array({1, lengths[i], 64}));
  }
  // Four padded to 64 make 256 tokens; five do not fit one call.
  const auto heavy = request(5, 40);
  EXPECT_EQ(heavy.first, 413) << heavy.second;
  EXPECT_NE(heavy.second.find("past the server's --max-tokens 256"), std::string::npos)
      << heavy.second;
  httplib::Client c("127.0.0.1", serve.port());
  const std::string metrics = c.Get("/metrics")->body;
  EXPECT_NE(metrics.find("torchperf_bucket_requests_total{bucket=\"16\"} 2"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("torchperf_bucket_requests_total{bucket=\"64\"} 2"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("torchperf_bucket_padding_share{bucket=\"64\"}"), std::string::npos);
  EXPECT_EQ(serve.stop(SIGTERM), 0);
}

TEST(ServeCommandTest, PerLengthBucketsLetOnlyRequestsOfOneLengthShareACall) {
  // --buckets per-length: today's calls before issue 62, the baseline a bucketed queue must beat.
  ServeProcess serve({"builtin:encoder", "--input", "int64:S@0..1000;int64:S@1..2", "--dim",
                      "S=4..64", "--buckets", "per-length", "--max-batch", "4",
                      "--max-queue-delay", "300ms"});
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  EXPECT_NE(serve.first_line().find("lengths queued in buckets per-length (1..64)"),
            std::string::npos)
      << serve.first_line();
  const auto request = [port = serve.port()](int length) {
    httplib::Client c("127.0.0.1", port);
    const std::vector<std::int64_t> ids(length, 7), mask(length, 1);
    const nlohmann::json body = {
        {"inputs",
         {{{"name", "input_ids"}, {"datatype", "INT64"}, {"shape", {1, length}}, {"data", ids}},
          {{"name", "attention_mask"}, {"datatype", "INT64"}, {"shape", {1, length}}, {"data", mask}}}}};
    const auto r = c.Post("/v2/models/encoder/infer", body.dump(), "application/json");
    return r ? r->status : 0;
  };
  std::vector<std::future<int>> answers;
  for (const int length : {5, 9, 5, 9}) answers.push_back(std::async(std::launch::async, request, length));
  for (auto& a : answers) EXPECT_EQ(a.get(), 200);
  httplib::Client c("127.0.0.1", serve.port());
  const std::string metrics = c.Get("/metrics")->body;
  EXPECT_NE(metrics.find("torchperf_bucket_requests_total{bucket=\"5\"} 2"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("torchperf_bucket_requests_total{bucket=\"9\"} 2"), std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find("torchperf_bucket_requests_total{bucket=\"64\"}"), std::string::npos)
      << metrics;
  EXPECT_EQ(serve.stop(SIGTERM), 0);
}

TEST(ServeCommandTest, LoadReportsPercentilesAndTheObjectivesVerdictAsJson) {
  ServeProcess serve({"builtin:mlp"});
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  // A closed loop's count is known only at its end (an open loop too short is refused before it
  // starts): a second of one client is too few for a p99.9 claim (4603 requests).
  const auto run = run_cli({"load", serve.url(), "--model", "mlp", "--concurrency", "1",
                            "--duration", "1s", "--slo", "p99.9=5s", "--json"});
  ASSERT_EQ(run.exit_code, 3) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j.at("ok"), j.at("requests"));
  EXPECT_GT(j.at("requests").get<int>(), 50);
  EXPECT_TRUE(j.at("latency_s").contains("p99"));
  EXPECT_FALSE(j.at("objective").at("enough"));
  const auto table = run_cli(
      {"load", serve.url(), "--model", "mlp", "--concurrency", "2", "--duration", "1s", "--quiet"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("closed loop, 2 clients"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("p99.9"), std::string::npos);
  EXPECT_EQ(serve.stop(SIGINT), 0);
}

TEST(ServeCommandTest, AWorkerKnobRestartsTheServerWithItsEnvironment) {
  ServeProcess serve({"builtin:mlp", "--omp-wait", "passive"});
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  EXPECT_NE(serve.first_line().find("omp_wait=passive"), std::string::npos) << serve.first_line();
  httplib::Client c("127.0.0.1", serve.port());
  EXPECT_EQ(c.Get("/v2/health/ready")->status, 200);
  EXPECT_EQ(serve.stop(SIGTERM), 0);
}

// Issue 62, part 4: what a start paid for its compiled artefact. The first start of a program
// under graph=aoti compiles its package unless the run's cache has it; the next finds it there.
TEST(ServeCommandTest, AnAotiServerSaysWhetherItsPackageWasCompiledOrFoundInTheCache) {
  const std::vector<std::string> args = {testing::fixture("mlp_dynamic.pt2"), "--graph", "aoti"};
  {
    ServeProcess first(args);
    ASSERT_GT(first.port(), 0) << first.first_line();
    EXPECT_TRUE(first.first_line().find("(cold: its AOTInductor package compiled in ") !=
                    std::string::npos ||
                first.first_line().find("(warm: its AOTInductor package from the cache)") !=
                    std::string::npos)
        << first.first_line();
    EXPECT_EQ(first.stop(SIGTERM), 0);
  }
  ServeProcess again(args);
  ASSERT_GT(again.port(), 0) << again.first_line();
  EXPECT_NE(again.first_line().find("after the process started (warm: its AOTInductor package "
                                    "from the cache)"),
            std::string::npos)
      << again.first_line();
  EXPECT_EQ(again.stop(SIGTERM), 0);
}

TEST(ServeCommandTest, TheServerWithoutAModelEchoesItsInputs) {
  ServeProcess serve({"--no-model", "--input", "8"});
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  EXPECT_NE(serve.first_line().find("serving 'echo'"), std::string::npos);
  const auto run = run_cli(
      {"load", serve.url(), "--model", "echo", "--rate", "200", "--duration", "0.5s", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out).at("errors").size(), 0u);
}

TEST(ServeCommandTest, LoadAgainstAServerThatIsDownFailsNamingTheUrl) {
  int port = 0;
  {
    ServeProcess gone({"--no-model", "--input", "8"});
    port = gone.port();
  }
  const auto run = run_cli({"load", "http://127.0.0.1:" + std::to_string(port), "--model", "echo",
                            "--rate", "10", "--duration", "1s"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("cannot reach the server at http://127.0.0.1:"), std::string::npos)
      << run.err;
}

// The outputs of one request of `rows` samples of the MLP's input (784 values each).
std::vector<float> mlp_answer(const testing::ServeProcess& serve, int rows, float value) {
  httplib::Client c("127.0.0.1", serve.port());
  const nlohmann::json body = {
      {"inputs",
       {{{"name", "x"},
         {"datatype", "FP32"},
         {"shape", {rows, 784}},
         {"data", std::vector<float>(static_cast<std::size_t>(rows) * 784, value)}}}}};
  const auto answer = c.Post("/v2/models/mlp/infer", body.dump(), "application/json");
  if (!answer || answer->status != 200) {
    ADD_FAILURE() << (answer ? answer->body : "no answer");
    return {};
  }
  return nlohmann::json::parse(answer->body).at("outputs")[0].at("data").get<std::vector<float>>();
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4f) << "value " << i;
}

// Issue 84: what was tuned is served, in whatever runtime won. A Python configuration runs in a
// Python worker behind the same queue (no Python in the server), its inputs and outputs crossing
// in shared memory, and answers as the C++ runtime does; a worker that dies is started again for
// the next call, and the one call it was running gets a 500 naming its log.
TEST(ServeCommandTest, APythonConfigurationIsServedInAPythonWorkerAndAnswersAsCppDoes) {
  ServeProcess cpp({"builtin:mlp", "--config", "runtime=cpp,threads=1"});
  ServeProcess python({"builtin:mlp", "--config", "runtime=python,graph=eager,threads=1",
                       "--max-call-memory", "off"});
  ASSERT_GT(cpp.port(), 0) << cpp.first_line();
  ASSERT_GT(python.port(), 0) << python.first_line();
  EXPECT_NE(python.first_line().find("runtime=python"), std::string::npos) << python.first_line();
  EXPECT_NE(python.first_line().find("in a Python worker (pid "), std::string::npos)
      << python.first_line();
  expect_close(mlp_answer(python, 3, 0.25f), mlp_answer(cpp, 3, 0.25f));
  expect_close(mlp_answer(python, 1, -1.0f), mlp_answer(cpp, 1, -1.0f));
  // Requests sent at once merge into calls of several requests, each answered its own rows.
  std::vector<std::future<std::vector<float>>> many;
  for (int i = 0; i < 6; ++i)
    many.push_back(std::async(std::launch::async, [&, i] {
      return mlp_answer(python, 1 + i % 3, 0.1f * static_cast<float>(i));
    }));
  for (int i = 0; i < 6; ++i)
    expect_close(many[static_cast<std::size_t>(i)].get(),
                 mlp_answer(cpp, 1 + i % 3, 0.1f * static_cast<float>(i)));
  // The worker killed: the server starts another for the next call.
  std::smatch pid;
  const std::string first = python.first_line();
  ASSERT_TRUE(std::regex_search(first, pid, std::regex(R"(Python worker \(pid (\d+))")));
  ::kill(std::stoi(pid[1].str()), SIGKILL);
  ::usleep(200000);
  expect_close(mlp_answer(python, 2, 0.5f), mlp_answer(cpp, 2, 0.5f));
  EXPECT_EQ(python.stop(SIGTERM), 0);
  EXPECT_EQ(cpp.stop(SIGTERM), 0);
}

// Issue 84: an engine's winner (OpenVINO here) is served too, converted in its worker as the
// tune's point converted it (the conversion cached on disk), answering as the C++ runtime does.
TEST(ServeCommandTest, AnEngineConfigurationIsServedAndAnswersAsCppDoes) {
  ServeProcess cpp({"builtin:mlp", "--config", "runtime=cpp,threads=1"});
  ServeProcess engine({"builtin:mlp", "--config", "runtime=openvino,graph=openvino,threads=1"});
  ASSERT_GT(cpp.port(), 0) << cpp.first_line();
  ASSERT_GT(engine.port(), 0) << engine.first_line();
  EXPECT_NE(engine.first_line().find("runtime=openvino"), std::string::npos)
      << engine.first_line();
  expect_close(mlp_answer(engine, 4, 0.3f), mlp_answer(cpp, 4, 0.3f));
  EXPECT_EQ(engine.stop(SIGTERM), 0);
  EXPECT_EQ(cpp.stop(SIGTERM), 0);
}

// Issue 84: `serve RUN` serves a tune's winner from its folder (its winner.json: the model, the
// configuration, and what the tune measured of it, which the start-up says), whatever runtime won.
TEST(ServeCommandTest, ATunesFolderServesItsWinnerAndSaysWhatTheTuneMeasured) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("torchperf-serve-tune-folder-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "winner.json") << nlohmann::json{
      {"tool", "torchperf"},
      {"kind", "configuration"},
      {"schema_version", 1},
      {"configuration", "runtime=python,graph=eager,threads=1,batch=8"},
      {"model", "builtin:mlp"},
      {"tuned",
       {{"samples_per_s", 1234.5},
        {"samples_per_s_low", 1200.0},
        {"samples_per_s_high", 1260.0},
        {"tokens_per_s", 0},
        {"latency_p50_ms", 6.48},
        {"batch", 8}}}}.dump();
  ServeProcess serve({dir.string()});
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  EXPECT_NE(serve.first_line().find("runtime=python"), std::string::npos) << serve.first_line();
  const std::string tuned = serve.line();
  EXPECT_NE(tuned.find("tuned: 1234.5 samples/s (95% CI 1200.0-1260.0) at batch 8, 6.48 ms a call"),
            std::string::npos)
      << tuned;
  EXPECT_EQ(mlp_answer(serve, 2, 0.5f).size(), 20u);
  EXPECT_EQ(serve.stop(SIGTERM), 0);
  // A folder without a winner, and a folder given with --config too: refused, naming it.
  std::filesystem::remove(dir / "winner.json");
  const auto none = run_cli({"serve", dir.string()});
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("is a folder without a winner.json"), std::string::npos) << none.err;
  std::filesystem::remove_all(dir);
}

// Issue 84's probe: 200 clients connecting at once saw 44 connections reset without an answer
// (httplib's listen backlog of 5). Every connection is answered now: 200, or 503 once the queue
// is full, never a reset.
TEST(ServeCommandTest, TwoHundredClientsAtOnceEachGetAnAnswer) {
  ServeProcess serve({"--no-model", "--input", "8", "--max-queue", "16", "--max-queue-delay",
                      "20ms", "--max-batch", "4"});
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  constexpr int kClients = 200;
  std::vector<int> status(kClients, 0);
  std::vector<std::thread> clients;
  std::atomic<int> connected{0};
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", serve.port());
      c.set_connection_timeout(10);
      c.set_read_timeout(20);
      ++connected;
      while (connected < kClients) std::this_thread::yield();  // all at once
      const std::string body =
          R"({"inputs": [{"name": "input0", "datatype": "FP32", "shape": [1, 8], "data": [1,2,3,4,5,6,7,8]}]})";
      const auto r = c.Post("/v2/models/echo/infer", body, "application/json");
      status[static_cast<std::size_t>(i)] = r ? r->status : -static_cast<int>(r.error());
    });
  for (auto& t : clients) t.join();
  int ok = 0, full = 0;
  for (int i = 0; i < kClients; ++i) {
    const int st = status[static_cast<std::size_t>(i)];
    EXPECT_TRUE(st == 200 || st == 503) << "client " << i << " got " << st
                                        << " (negative: httplib's error, no HTTP answer)";
    ok += st == 200;
    full += st == 503;
  }
  EXPECT_EQ(ok + full, kClients);
  EXPECT_GT(ok, 0);
  // What /metrics counted is what the clients got.
  httplib::Client c("127.0.0.1", serve.port());
  const std::string metrics = c.Get("/metrics")->body;
  EXPECT_NE(metrics.find(fmt::format("torchperf_responses_total{{code=\"200\"}} {}", ok)),
            std::string::npos)
      << metrics;
  EXPECT_EQ(serve.stop(SIGTERM), 0);
}

TEST(ServeCommandTest, BadFlagsAndModelsGetOneLineErrorsWithTheirExitCodes) {
  const auto delay = run_cli({"serve", "builtin:mlp", "--max-queue-delay", "2"});
  EXPECT_EQ(delay.exit_code, 2);
  EXPECT_NE(delay.err.find("--max-queue-delay '2'"), std::string::npos) << delay.err;
  const auto model = run_cli({"serve", testing::fixture("not_a_model.txt"), "--input", "3"});
  EXPECT_EQ(model.exit_code, 4) << model.err;
  const auto both =
      run_cli({"load", "http://127.0.0.1:1", "--model", "m", "--rate", "5", "--concurrency", "2"});
  EXPECT_EQ(both.exit_code, 2);
  // Issue 84's probe: --slo on 200 requests always exited 3 (p99 needs 459 at 99% confidence).
  const auto short_slo = run_cli({"load", "http://127.0.0.1:1", "--model", "m", "--rate", "20",
                                  "--duration", "10s", "--slo", "p99=50ms"});
  EXPECT_EQ(short_slo.exit_code, 2) << short_slo.err;
  EXPECT_NE(short_slo.err.find("needs at least 459 answered requests, and --rate 20 for "
                               "--duration 10s sends about 200: give --duration 23s or more"),
            std::string::npos)
      << short_slo.err;
  const auto url = run_cli({"load", "127.0.0.1:8000", "--model", "m", "--rate", "5"});
  EXPECT_EQ(url.exit_code, 2);
  EXPECT_NE(url.err.find("expected http://HOST:PORT"), std::string::npos) << url.err;
  const auto buckets = run_cli({"serve", "builtin:encoder", "--input", "int64:S@0..1000;int64:S@1..2",
                                "--dim", "S=4..64", "--buckets", "64/32"});
  EXPECT_EQ(buckets.exit_code, 2);
  EXPECT_NE(buckets.err.find("--buckets '64/32': not positive and ascending"), std::string::npos)
      << buckets.err;
  const auto shape = run_cli({"serve", "builtin:mlp", "--input", "7"});
  EXPECT_EQ(shape.exit_code, 5) << shape.err;
  // Issue 84's probe: counts past int64 or not whole, and bounds no request could ever meet, are
  // refused before the port opens; a bound turned off is said at start-up.
  const struct {
    std::vector<std::string> args;
    std::string piece;
  } refused[] = {
      {{"serve", "builtin:mlp", "--max-tokens", "99999999999999999999"},
       "--max-tokens '99999999999999999999': expected padded tokens a call (0: no budget) as a "
       "whole number, at most 9223372036854775807 (it is past that)"},
      {{"serve", "builtin:mlp", "--max-tokens", "1e3"}, "--max-tokens '1e3': expected"},
      {{"serve", "builtin:mlp", "--max-client-batch", "-4"}, "--max-client-batch '-4': expected"},
      {{"serve", "builtin:encoder", "--input", "int64:S@0..1000;int64:S@1..2", "--dim", "S=4..64",
        "--max-tokens", "10"},
       "one sample of S at the --dim's longest, 64, takes 64 padded tokens, so lengths past 10 "
       "could never be served; give at least 64"},
      {{"serve", "builtin:encoder", "--input", "int64:S@0..1000;int64:S@1..2", "--dim", "S=4..64",
        "--max-call-memory", "1B"},
       "--max-call-memory 1B: a call may hold 1 padded tokens by memory, and one sample of S"},
      {{"serve", "builtin:mlp", "--max-call-memory", "1B"},
       "so every request would be refused; give more memory"},
  };
  for (const auto& bad : refused) {
    const auto run = run_cli(bad.args);
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find(bad.piece), std::string::npos) << run.err;
  }
  const auto open = testing::run_shell(
      "timeout -s INT 8 \"$TORCHPERF\" serve builtin:mlp --max-call-memory off "
      "--max-client-batch 100000 --port 0");
  EXPECT_NE(open.err.find("warning: --max-call-memory off and no --max-tokens: a call is bounded "
                          "by nothing but --max-client-batch, so one request of 100000 samples "
                          "runs whole"),
            std::string::npos)
      << open.err;
  // Issue 63: the second --dim was dropped in silence, the first kept.
  const auto twice = run_cli({"serve", "builtin:encoder", "--input", "int64:S@0..1000;int64:S@1..2",
                              "--dim", "S=4..64", "--dim", "S=8..16"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("--dim S is given twice (S=4..64 and S=8..16)"), std::string::npos)
      << twice.err;
  const auto drain = run_cli({"serve", "builtin:mlp", "--drain-timeout", "soon"});
  EXPECT_EQ(drain.exit_code, 2);
  EXPECT_NE(drain.err.find("--drain-timeout 'soon'"), std::string::npos) << drain.err;
}

TEST(ServeCommandTest, SigtermStopsTheServerWithinItsDrainTimeEvenInTheMiddleOfAModelCall) {
  // Issue 63: one request's call ran on, and SIGTERM did not stop the server within 8 s.
  ServeProcess serve({testing::fixture("slow_call.pt"), "--input", "float32:1", "--drain-timeout",
                      "1s", "--shapes", "lazy"});
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  const nlohmann::json body = {
      {"inputs", {{{"name", "x"}, {"datatype", "FP32"}, {"shape", {1, 1}}, {"data", {1e9}}}}}};
  auto call = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", serve.port());
    c.set_read_timeout(std::chrono::seconds(120));
    return c.Post("/v2/models/slow_call/infer", body.dump(), "application/json");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the call is running
  const auto signalled = std::chrono::steady_clock::now();
  EXPECT_EQ(serve.stop(SIGTERM), 143);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  EXPECT_LT(took, 8.0);  // 1 s of drain time; the bound is loose for a loaded machine
  EXPECT_GE(took, 0.9);
  std::string rest;
  for (std::string l = serve.line(); !l.empty(); l = serve.line()) rest += l;
  EXPECT_NE(rest.find("stopped (SIGTERM): the drain time of 1 s ran out with a model call still "
                      "running"),
            std::string::npos)
      << rest;
  const auto answer = call.get();
  EXPECT_TRUE(!answer || answer->status != 200);
}

}  // namespace
}  // namespace torchperf

namespace torchperf {
namespace {

TEST(ServeTuneCommandTest, MeasuresCandidatesInFreshServersAndNamesAWinnerWithinTheBudget) {
  const std::string out = ::testing::TempDir() + "serve-tune-cli";
  // The tiny encoder, not the MLP: the MLP's thousands of requests a second reach the HTTP path's
  // own ceiling under the sanitizers beside another test, where no rate tried met the objective.
  // Lengths that vary (issue 62): the queue's buckets are searched too, and the objective (p90,
  // so that a short run has requests enough for the longest quarter's claim) holds for each.
  // A 45 s budget: under the sanitizers beside another test, the curves and the first server's
  // start once took all of a 25 s one, before any load run.
  const auto run = run_cli({"serve-tune", "builtin:encoder", "--input",
                            "int64:S@0..1000;int64:S@1..2", "--dim", "S=lognormal:12:0.5:4..32",
                            "--buckets", "one", "--buckets", "per-length", "--token-budgets", "0",
                            "--slo", "p90=1s", "--budget", "45s", "--max-batches", "1,4",
                            "--delays", "1ms", "--cores", "1", "--curve-time", "0.3", "--min-run",
                            "1", "--out", out, "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("WINNER"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("one request per forward"), std::string::npos);
  EXPECT_NE(run.out.find("serve it: torchperf serve builtin:encoder --input "
                         "'int64:S@0..1000;int64:S@1..2' --dim 'S=lognormal:12:0.5:4..32'"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("buckets=per-length (1..32)"), std::string::npos) << run.out;
  std::ifstream in(out + "/serve-tune.json");
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("schema"), "torchperf.serve-tune/1");
  EXPECT_LE(j.at("elapsed_s").get<double>(), 45.0 + 10.0);  // the budget plus one run's tail
  bool winner = false;
  bool longest_quarter_judged = false;
  for (const auto& c : j.at("candidates")) {
    winner = winner || c.at("winner").get<bool>();
    if (c.at("measured").get<bool>()) {
      EXPECT_GT(c.at("start_s").get<double>(), 0.0);
    }
    for (const auto& t : c.at("trials"))
      longest_quarter_judged = longest_quarter_judged ||
                               t.at("summary").at("objective").contains("longest_quarter");
    EXPECT_LE(c.at("instances").get<int>() * c.at("threads").get<int>(), 1);
  }
  EXPECT_TRUE(winner);
  EXPECT_TRUE(longest_quarter_judged);
  EXPECT_NE(run.out.find("its server was ready"), std::string::npos) << run.out;
  EXPECT_TRUE(std::filesystem::exists(out + "/serve-tune.html"));
}

TEST(ServeTuneCommandTest, SigtermStopsItAndLeavesNoServerRunning) {
  // Stopped a second after its first server started; then no process may hold a server log.
  const auto r = testing::run_shell(
      "d=$(mktemp -d); \"$TORCHPERF\" serve-tune builtin:mlp --slo p99=1s --budget 60s "
      "--max-batches 1,4 --delays 1ms --cores 1 --curve-time 0.3 --min-run 2 --out \"$d\" "
      "--quiet > /dev/null 2> \"$d/err\" & pid=$!; i=0; "
      "while [ ! -e \"$d/logs/server-1.log\" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); "
      "done; sleep 1; kill -TERM $pid; wait $pid; code=$?; sleep 0.5; "
      "for p in /proc/[0-9]*; do ls -l $p/fd 2>/dev/null | grep -q \"$d/logs/server\" && "
      "echo \"orphan ${p#/proc/}\"; done; cat \"$d/err\" >&2; rm -rf \"$d\"; exit $code");
  if (r.exit_code == 0) GTEST_SKIP() << "serve-tune ended before SIGTERM";
  EXPECT_EQ(r.exit_code, 143) << r.err;
  EXPECT_NE(r.err.find("torchperf: error: serve-tune stopped by SIGTERM while"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("orphan"), std::string::npos) << r.out;
}

TEST(ServeTuneCommandTest, AStartCapNoServerMeetsCrownsNothingAndSaysTheCapIsWhy) {
  const std::string out = ::testing::TempDir() + "serve-tune-cap";
  const auto run = run_cli({"serve-tune", "builtin:mlp", "--slo", "p99=1s", "--budget", "30s",
                            "--max-start", "1ms", "--max-batches", "1", "--delays", "1ms",
                            "--cores", "1", "--curve-time", "0.3", "--out", out, "--quiet"});
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_NE(run.out.find("past --max-start"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("WINNER"), std::string::npos) << run.out;
  EXPECT_NE(run.err.find("(no server was ready within --max-start 0.001 s)"), std::string::npos)
      << run.err;
}

TEST(ServeTuneCommandTest, BadSettingsGetUsageErrors) {
  EXPECT_EQ(run_cli({"serve-tune", "builtin:mlp", "--max-batches", "0,4"}).exit_code, 2);
  EXPECT_EQ(run_cli({"serve-tune", "builtin:mlp", "--slo", "fast"}).exit_code, 2);
  EXPECT_EQ(run_cli({"serve-tune", "builtin:mlp", "--delays", "1"}).exit_code, 2);
  const auto buckets = run_cli({"serve-tune", "builtin:mlp", "--buckets", "one"});
  EXPECT_EQ(buckets.exit_code, 2);
  EXPECT_NE(buckets.err.find("need a --dim"), std::string::npos) << buckets.err;
  const auto requests = run_cli({"serve-tune", "builtin:mlp", "--requests", "-5"});
  EXPECT_EQ(requests.exit_code, 2);
  EXPECT_NE(requests.err.find("--requests: expected a count of requests >= 0"), std::string::npos)
      << requests.err;
}

}  // namespace
}  // namespace torchperf

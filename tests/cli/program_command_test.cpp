// torch.export programs through the CLI: bench, tune (with --resume) and --from-python, on the
// Linear stack that fixtures.aoti compiled into the shared test cache.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

#include "support/serve_process.h"
#include "support/test_support.h"
#include "torchperf/models/aoti_package.h"
#include "torchperf/sweep/compile_costs.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::fixture;
using testing::run_cli;
using testing::run_shell;
using testing::ServeProcess;

fs::path temp_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("torchperf-program-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<nlohmann::json> journal(const fs::path& out, const std::string& record) {
  std::vector<nlohmann::json> found;
  std::ifstream in(out / "results.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("record", "") == record) found.push_back(j);
  }
  return found;
}

}  // namespace

TEST(ProgramCommandTest, BenchRunsAProgramsAotiPackageFromTheCacheAndChecksItAgainstEagerPyTorch) {
  const CliRun run = run_cli({"bench", fixture("mlp_dynamic.pt2"), "--batch", "16", "--threads",
                              "2", "--time", "0.3", "--target-ci", "0.5", "--json"});
  ASSERT_TRUE(testing::measured(run)) << run.err;
  EXPECT_EQ(run.err.find("deprecated"), std::string::npos) << run.err;
  const auto m = nlohmann::json::parse(run.out)["measurement"];
  EXPECT_EQ(m["configuration"]["knobs"]["graph"]["value"], "aoti");
  EXPECT_EQ(m["batch"], 16);
  EXPECT_EQ(m["compile"]["cache_hit"], true);
  EXPECT_GT(m["compile"]["compile_s"].get<double>(), 0);
  EXPECT_GT(m["quality"]["cosine"].get<double>(), 0.9999);
  EXPECT_GT(m["flops_per_sample"].get<double>(), 0);
}

TEST(ProgramCommandTest, TheTableShowsTheCompileApartFromTheRun) {
  const CliRun run = run_cli({"bench", fixture("mlp_dynamic.pt2"), "--time", "0.2", "--target-ci", "0.5"});
  ASSERT_TRUE(testing::measured(run)) << run.err;
  EXPECT_NE(run.out.find("from the cache (paid 0 s now)"), std::string::npos) << run.out;
}

TEST(ProgramCommandTest, AnAotiPackageGivenAsTheModelIsRefusedSayingWhatToPass) {
  const std::string package = cached_aoti_package(fixture("mlp_dynamic.pt2"), AotiOptions{});
  ASSERT_FALSE(package.empty());
  const CliRun run = run_cli({"bench", package});
  EXPECT_EQ(run.exit_code, 4) << run.err;
  EXPECT_NE(run.err.find("an AOTInductor package (already compiled)"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("torch.export.save"), std::string::npos) << run.err;
}

TEST(ProgramCommandTest, ServeBatchesRequestsIntoCallsOfTheAotiPackage) {
  const fs::path dir = temp_dir("serve");
  // Eight clients at once: the queue gathers their requests into calls of up to 8, each a batch
  // size the package was not called with before (its batch is dynamic).
  const CliRun run = run_shell(
      "cd " + dir.string() + " || exit 1; \"$TORCHPERF\" serve " + fixture("mlp_dynamic.pt2") +
      " --port 0 --max-batch 8 --name mlp > serve.out 2>&1 & pid=$!; "
      "for i in $(seq 300); do grep -q 'http://' serve.out && break; sleep 0.1; done; "
      "url=$(grep -o 'http://[0-9.]*:[0-9]*' serve.out | head -1); "
      "\"$TORCHPERF\" load \"$url\" --model mlp --concurrency 8 --duration 2s --json --quiet; rc=$?; "
      "curl -s \"$url/metrics\" | grep '^torchperf_batch_size_bucket' >&2; "
      "kill $pid; wait $pid; exit $rc");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto summary = nlohmann::json::parse(run.out);
  EXPECT_GT(summary["ok"].get<int>(), 0);
  EXPECT_EQ(summary["ok"], summary["requests"]) << run.out;
  // Some calls held more than one request: the bucket le="1" counts fewer than all calls.
  const auto le1 = run.err.find("le=\"1\"} ");
  const auto inf = run.err.find("le=\"+Inf\"} ");
  ASSERT_NE(le1, std::string::npos) << run.err;
  ASSERT_NE(inf, std::string::npos) << run.err;
  EXPECT_LT(std::stol(run.err.substr(run.err.find("} ", le1) + 2)),
            std::stol(run.err.substr(run.err.find("} ", inf) + 2)))
      << run.err;
  fs::remove_all(dir);
}

// A program exported with a static batch of 2 (the Linear stack of mlp_dynamic.pt2, its weights
// too): LibTorch would resize its output for any other batch and answer garbage past row 2.
TEST(ProgramCommandTest, ServeOfAStaticBatchProgramRefusesOtherBatchesAndNeverMergesPastIt) {
  ServeProcess serve({fixture("exported.pt2"), "--max-batch", "8", "--max-queue-delay", "50ms",
                      "--name", "mlp"});
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  httplib::Client c("127.0.0.1", serve.port());
  c.set_read_timeout(60);
  const auto request = [](int batch, float seed) {
    std::vector<float> data(static_cast<std::size_t>(batch) * 32);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = seed + 0.01f * static_cast<float>(i % 97);
    return nlohmann::json{{"inputs",
                           {{{"name", "input"}, {"datatype", "FP32"}, {"shape", {batch, 32}},
                             {"data", data}}}}}
        .dump();
  };
  for (const int batch : {1, 3, 5, 8}) {
    const auto r = c.Post("/v2/models/mlp/infer", request(batch, 0.5f), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << batch << ": " << r->body;
    EXPECT_NE(r->body.find("the model takes a batch of exactly 2"), std::string::npos) << r->body;
  }
  // Alone, each batch-2 request's answer; then the same eight at once, which the queue gathers
  // into one batch of requests: each answer must be the one it had alone.
  std::vector<std::string> alone;
  for (int i = 0; i < 8; ++i) {
    const auto r = c.Post("/v2/models/mlp/infer", request(2, 0.1f * i), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    alone.push_back(nlohmann::json::parse(r->body).at("outputs").dump());
  }
  std::vector<std::future<std::string>> together;
  for (int i = 0; i < 8; ++i)
    together.push_back(std::async(std::launch::async, [&, i] {
      httplib::Client client("127.0.0.1", serve.port());
      client.set_read_timeout(60);
      const auto r = client.Post("/v2/models/mlp/infer", request(2, 0.1f * i), "application/json");
      return r && r->status == 200 ? nlohmann::json::parse(r->body).at("outputs").dump()
                                   : std::string("failed");
    }));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(together[i].get(), alone[i]) << "request " << i;
  EXPECT_EQ(serve.stop(SIGTERM), 0);
}

TEST(ProgramCommandTest, TuneSweepsAotiPointsAndItsResumeFindsThePackageInTheCache) {
  const fs::path out = temp_dir("tune") / "run";
  const std::vector<std::string> args = {
      "tune", fixture("mlp_dynamic.pt2"), "--space", "runtime=cpp;threads=1,2;batch=1,8;precision=fp32;graph=aoti",
      "--time", "0.3", "--budget", "3m", "--out", out.string(), "--quiet", "--json"};
  const CliRun run = run_cli(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto packages = journal(out, "package");
  ASSERT_EQ(packages.size(), 1u);
  EXPECT_EQ(packages[0]["options"], "precision=fp32,max_autotune=0,device=cpu");
  EXPECT_EQ(packages[0]["cache_hit"], true);
  const auto points = journal(out, "point");
  ASSERT_FALSE(points.empty());
  for (const auto& p : points) {
    EXPECT_NE(p["configuration"].get<std::string>().find("graph=aoti"), std::string::npos);
    EXPECT_EQ(p["measurement"]["compile"]["cache_hit"], true) << p.dump();
  }
  const CliRun resumed = run_cli({"tune", "--resume", out.string(), "--quiet", "--json"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto again = journal(out, "package");
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[1]["cache_hit"], true);
  EXPECT_EQ(again[1]["path"], packages[0]["path"]);
  fs::remove_all(out.parent_path());
}

TEST(ProgramCommandTest, APackageWhoseKnownCompileTheBudgetCannotPayIsNeverCompiledAndItsPointsWait) {
  // An earlier tune of this program recorded that its package takes far longer than the budget
  // (in a cache of this test's own): the search never proposes its points, and says it was cut.
  const fs::path dir = temp_dir("budget");
  const fs::path out = dir / "run";
  ::setenv("TORCHPERF_CACHE_DIR", (dir / "cache").c_str(), 1);
  CompileCosts(compile_costs_path(fixture("mlp_dynamic.pt2")))
      .record({"aoti", AotiOptions{}.to_string()}, 1e6);
  const CliRun run = run_cli({"tune", fixture("mlp_dynamic.pt2"), "--space",
                              "runtime=cpp,python;threads=1;batch=8;precision=fp32;graph=aoti,eager",
                              "--time", "0.2", "--budget", "4m", "--out", out.string(), "--json"});
  ::unsetenv("TORCHPERF_CACHE_DIR");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(journal(out, "package").empty()) << "nothing compiled";
  const auto points = journal(out, "point");
  ASSERT_FALSE(points.empty());
  for (const auto& p : points)
    EXPECT_EQ(p["configuration"].get<std::string>().find("graph=aoti"), std::string::npos) << p.dump();
  EXPECT_NE(run.err.find("1 to compile when a point needs one"), std::string::npos) << run.err;
  EXPECT_TRUE(nlohmann::json::parse(run.out).at("budget_exhausted").get<bool>()) << run.out;
  fs::remove_all(dir);
}

TEST(ProgramCommandTest, ATorchCompileWinnersCompiledKernelsAreKeptWithTheResultAndNoOthers) {
  const fs::path out = temp_dir("artifacts") / "run";
  const CliRun run = run_cli({"tune", fixture("mlp_dynamic.pt2"), "--space",
                              "runtime=python;graph=eager,compile;threads=1;batch=8;grad=on",
                              "--time", "0.2", "--budget", "3m", "--out", out.string(), "--quiet",
                              "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string winner = nlohmann::json::parse(run.out).at("winner");
  const fs::path kept = out / "artifacts" / "compile_cache.bin";
  if (winner.find("graph=compile") != std::string::npos) {
    ASSERT_TRUE(fs::exists(kept)) << winner;
    EXPECT_GT(fs::file_size(kept), 0u);
  } else {
    EXPECT_FALSE(fs::exists(kept)) << "an eager winner compiled nothing: " << winner;
  }
  for (const auto& entry : fs::directory_iterator(out / "workers"))
    EXPECT_EQ(entry.path().string().find(".compile_cache.bin"), std::string::npos)
        << entry.path() << " is left behind";
  fs::remove_all(out.parent_path());
}

TEST(ProgramCommandTest, ATorchCompileGraphOverAStreamIsPricedWithTheRecompilesOfItsFirstPass) {
  // graph=compile specialises on the first width and recompiles, dynamic, on the second: in the
  // stream's first pass, which the next point of that graph and the next tune must pay for too.
  // The shared cache: the careful pair's AOTInductor package is compiled there once.
  const fs::path dir = temp_dir("stream-price");
  const fs::path out = dir / "run";
  const std::string costs = compile_costs_path(fixture("token_pool_dynamic.pt2"));
  const CliRun run = run_cli(
      {"tune", fixture("token_pool_dynamic.pt2"), "--input", "int64:S@0..1000;int64:S@1..2",
       "--dim", "S=lognormal:20:0.8:2..256", "--space",
       "runtime=python;graph=compile;threads=1;batch=4;precision=fp32;grad=inference;"
       "padding=batch-max;batching=arrival",
       "--time", "0.2", "--out", out.string(), "--quiet", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto points = journal(out, "point");
  ASSERT_EQ(points.size(), 1u);
  const auto& m = points[0]["measurement"];
  const double warm_s = m["stream"]["warm_s"].get<double>();
  EXPECT_GT(warm_s, 0);
  std::optional<double> recorded;
  std::ifstream in(costs);
  for (std::string line; std::getline(in, line);) {  // the latest line of this graph
    const auto j = nlohmann::json::parse(line);
    const std::string what = j["what"];
    if (what.rfind("python", 0) == 0 && what.find("batch=4") != std::string::npos &&
        what.find("graph=compile,") != std::string::npos)
      recorded = j["compile_s"];
  }
  ASSERT_TRUE(recorded) << "no torch.compile price in " << costs;
  EXPECT_NEAR(*recorded, m["compile"]["compile_s"].get<double>() + warm_s, 1e-9);
  fs::remove_all(dir);
}

TEST(ProgramCommandTest, TuneOfAProgramMeasuresBothRuntimesAndItsReportNamesTheBestOfEach) {
  // runtime is not named: a program's default sweeps both. graph=aoti is C++'s and compile is
  // Python's: each runtime runs the graphs asked for that it takes, never one nobody asked for
  // (Python's eager) in place of the other's.
  const fs::path out = temp_dir("runtimes") / "run";
  const CliRun run = run_cli({"tune", fixture("mlp_dynamic.pt2"), "--space",
                              "threads=1;batch=8;precision=fp32;graph=aoti,compile;grad=inference",
                              "--time", "0.3", "--budget", "4m", "--out", out.string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::map<std::string, std::set<std::string>> graphs;
  for (const auto& p : journal(out, "point")) {
    const std::string key = p["configuration"];
    const std::string runtime = key.find("runtime=python") != std::string::npos ? "python" : "cpp";
    // Python's baseline graph (eager) is not listed in its key.
    const auto at = key.find("graph=");
    graphs[runtime].insert(at == std::string::npos ? "eager"
                                                   : key.substr(at + 6, key.find(',', at) - at - 6));
    if (key.find("graph=compile") != std::string::npos) {
      EXPECT_GT(p["measurement"]["compile"]["compile_s"].get<double>(), 0) << p.dump();
    }
  }
  EXPECT_EQ(graphs["cpp"], (std::set<std::string>{"aoti"}));
  EXPECT_EQ(graphs["python"], (std::set<std::string>{"compile"}));
  EXPECT_NE(run.out.find("best of each runtime:"), std::string::npos) << run.out;
  const CliRun report = run_cli({"report", out.string(), "--json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const auto j = nlohmann::json::parse(report.out);
  bool runtime_named = false;
  for (const auto& r : j["recommendations"])
    runtime_named |= r["kind"] == "runtime" &&
                     r["text"].get<std::string>().find("best in Python torch.compile: ") != std::string::npos;
  EXPECT_TRUE(runtime_named) << j["recommendations"].dump();
  EXPECT_TRUE(j["pareto"].contains("throughput-compile"));
  fs::remove_all(out.parent_path());
}

TEST(ProgramCommandTest, AProgramExportedWithADynamicLengthRunsAStreamOfLengthsInItsPackage) {
  // Issue 52: Dim on batch and length; the package and eager PyTorch run the same samples.
  const auto stream_of = [](const std::string& runtime) {
    const CliRun run = run_cli({"bench", fixture("token_pool_dynamic.pt2"), "--input",
                                "int64:S@0..1000;int64:S@1..2", "--dim",
                                "S=lognormal:20:0.8:2..256", "--batch", "4", "--runtime", runtime,
                                "--time", "0.2", "--target-ci", "0.5", "--json", "--quiet"});
    EXPECT_TRUE(testing::measured(run)) << runtime << run.err;
    return nlohmann::json::parse(run.out)["measurement"];
  };
  const auto package = stream_of("cpp");
  const auto eager = stream_of("python");
  EXPECT_EQ(package["configuration"]["knobs"]["graph"]["value"], "aoti");
  EXPECT_GT(package["quality"]["cosine"].get<double>(), 0.9999);
  EXPECT_EQ(package["stream"]["batches"], 64) << "a drawn distribution's stream";
  EXPECT_EQ(package["stream"]["timed_batches"], 8) << "a pass drawn across it";
  EXPECT_EQ(eager["stream"]["timed_batches"], 8);
  EXPECT_EQ(package["stream"]["useful_tokens"], eager["stream"]["useful_tokens"]);
  EXPECT_EQ(package["stream"]["padded_tokens"], eager["stream"]["padded_tokens"]);
  EXPECT_GT(package["stream"]["tokens_per_s"].get<double>(), 0);
}

TEST(ProgramCommandTest, FromPythonExportsAUsersModuleBesideTheResultsWithADynamicBatch) {
  const fs::path dir = temp_dir("source");
  std::ofstream(dir / "netmod.py") << "import torch\n"
                                      "class Net(torch.nn.Module):\n"
                                      "    def __init__(self):\n"
                                      "        super().__init__()\n"
                                      "        self.fc = torch.nn.Linear(16, 4)\n"
                                      "    def forward(self, x):\n"
                                      "        return torch.tanh(self.fc(x))\n";
  const CliRun run = run_shell("cd " + dir.string() +
                               " && \"$TORCHPERF\" bench --from-python netmod:Net --input 16 "
                               "--batch 5 --time 0.2 --target-ci 0.5 --json");
  ASSERT_TRUE(run.exit_code == 0 || run.exit_code == 3) << run.err;
  EXPECT_NE(run.err.find("exporting netmod:Net with torch.export to netmod.Net.pt2"),
            std::string::npos)
      << run.err;
  ASSERT_TRUE(fs::exists(dir / "netmod.Net.pt2"));
  const auto m = nlohmann::json::parse(run.out)["measurement"];
  EXPECT_EQ(m["batch"], 5);  // a dynamic batch: not the example's 2
  EXPECT_GT(m["quality"]["cosine"].get<double>(), 0.9999);
  // Exported again (seeded, so the same weights), the program finds its package in the cache.
  const CliRun again = run_shell("cd " + dir.string() +
                                 " && \"$TORCHPERF\" bench --from-python netmod:Net --input 16 "
                                 "--batch 5 --time 0.2 --target-ci 0.5 --json --quiet");
  ASSERT_TRUE(again.exit_code == 0 || again.exit_code == 3) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["measurement"]["compile"]["cache_hit"], true);
  // A callable that is not a module, one line and exit 10.
  std::ofstream(dir / "notmod.py") << "def make():\n    return 3\n";
  const CliRun bad = run_shell("cd " + dir.string() +
                               " && \"$TORCHPERF\" bench --from-python notmod:make --input 16 --quiet");
  EXPECT_EQ(bad.exit_code, 10) << bad.err;
  EXPECT_NE(bad.err.find("returned int, expected an nn.Module"), std::string::npos) << bad.err;
  fs::remove_all(dir);
}

}  // namespace torchperf

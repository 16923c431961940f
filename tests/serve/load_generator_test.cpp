#include "torchperf/serve/load_generator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "support/test_support.h"
#include "torchperf/error.h"
#include "torchperf/feed/length_distribution.h"
#include "torchperf/serve/inference_server.h"

namespace torchperf {
namespace {

// An echo server (no model) on a free loopback port, until stopped.
class EchoServer {
 public:
  explicit EchoServer(ServerOptions o = {}) {
    o.port = 0;
    o.model_name = "echo";
    std::vector<std::unique_ptr<ModelRunner>> v;
    v.push_back(std::make_unique<EchoRunner>(
        std::vector<WireTensorSpec>{{"x", WireType::kFp32, {-1, 16}}}));
    server_ = std::make_unique<InferenceServer>(o, std::move(v), clock_);
    port_ = server_->bind();
    done_ = std::async(std::launch::async, [this] { server_->serve(); });
  }
  ~EchoServer() { stop(); }
  void stop() {
    server_->stop();
    if (done_.valid()) done_.get();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  SteadyTimeSource clock_;
  std::unique_ptr<InferenceServer> server_;
  int port_ = 0;
  std::future<void> done_;
};

LoadOptions open_loop(const std::string& url, double rate, double duration) {
  LoadOptions o;
  o.url = url;
  o.model = "echo";
  o.arrivals.rate_per_s = rate;
  o.arrivals.duration_s = duration;
  o.arrivals.seed = 7;
  o.connections = 8;
  o.timeout_s = 5;
  return o;
}

std::size_t ok_count(const LoadRun& run) {
  std::size_t n = 0;
  for (const auto& r : run.records) n += r.outcome == RequestOutcome::kOk;
  return n;
}

TEST(LoadGeneratorTest, AnOpenLoopRunSendsEveryScheduledRequestOnceAndTimesItFromItsSchedule) {
  EchoServer server;
  const LoadOptions o = open_loop(server.url(), 200, 0.5);
  const LoadRun run = run_load(o);
  const auto schedule = schedule_arrivals(o.arrivals);
  ASSERT_EQ(run.records.size(), schedule.size());
  EXPECT_EQ(ok_count(run), schedule.size());
  EXPECT_EQ(run.unsent, 0u);
  EXPECT_TRUE(run.stopped.empty());
  EXPECT_DOUBLE_EQ(run.duration_s, 0.5);
  std::vector<double> scheduled;
  for (const auto& r : run.records) {
    scheduled.push_back(r.scheduled_s);
    EXPECT_GE(r.sent_s, r.scheduled_s);
    EXPECT_GE(r.done_s, r.sent_s);
  }
  std::sort(scheduled.begin(), scheduled.end());
  EXPECT_EQ(scheduled, schedule);
  EXPECT_EQ(run.signature.inputs[0].shape, (std::vector<std::int64_t>{-1, 16}));
}

TEST(LoadGeneratorTest, JsonBodiesAreServedToo) {
  EchoServer server;
  LoadOptions o = open_loop(server.url(), 100, 0.2);
  o.binary = false;
  const LoadRun run = run_load(o);
  EXPECT_EQ(ok_count(run), run.records.size());
  EXPECT_GT(run.records.size(), 0u);
}

TEST(LoadGeneratorTest, AClosedLoopRunKeepsItsClientsBusyForTheDuration) {
  EchoServer server;
  LoadOptions o = open_loop(server.url(), 0, 0.3);
  o.concurrency = 3;
  const LoadRun run = run_load(o);
  EXPECT_GE(run.duration_s, 0.3);
  EXPECT_GT(ok_count(run), 3u);
  for (const auto& r : run.records) EXPECT_EQ(r.scheduled_s, r.sent_s);
}

TEST(LoadGeneratorTest, RejectedRequestsAreCountedAsSuch) {
  ServerOptions tiny;
  tiny.batching = {1, 0.0, 1};
  tiny.http_threads = 64;
  EchoServer server(tiny);
  LoadOptions o = open_loop(server.url(), 0, 0.3);
  o.concurrency = 32;
  const LoadRun run = run_load(o);
  const LoadSummary s = summarize_load(run.records, run.duration_s, std::nullopt);
  EXPECT_GT(s.ok, 0u);
  // Whether any was refused depends on timing; whatever was refused is counted as rejected.
  for (const auto& [kind, n] : s.errors) EXPECT_EQ(kind, to_string(RequestOutcome::kRejected));
}

TEST(LoadGeneratorTest, AServerThatIsDownIsAClearErrorNamingTheUrl) {
  int port = 0;
  {
    EchoServer gone;
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  try {
    run_load(open_loop("http://127.0.0.1:" + std::to_string(port), 10, 0.1));
    FAIL() << "ran against nothing";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("cannot reach the server at http://127.0.0.1:"),
              std::string::npos)
        << e.what();
  }
}

TEST(LoadGeneratorTest, AServerThatDiesMidRunEndsTheRunEarlyWithTheCountsSoFar) {
  auto server = std::make_unique<EchoServer>();
  LoadOptions o = open_loop(server->url(), 100, 3.0);
  auto run = std::async(std::launch::async, [&] { return run_load(o); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  server->stop();
  const auto start = std::chrono::steady_clock::now();
  const LoadRun r = run.get();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_NE(r.stopped.find("stopped answering"), std::string::npos) << r.stopped;
  EXPECT_GT(r.unsent, 0u);
  EXPECT_GT(ok_count(r), 0u);
}

TEST(LoadGeneratorTest, AnUnknownModelIsAUsageErrorNamingIt) {
  EchoServer server;
  LoadOptions o = open_loop(server.url(), 10, 0.1);
  o.model = "resnet";
  try {
    run_load(o);
    FAIL() << "ran";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--model 'resnet'"), std::string::npos) << e.what();
  }
}

// A server of token ids and their mask that keeps what it was sent.
class RecordingRunner final : public ModelRunner {
 public:
  explicit RecordingRunner(std::vector<std::vector<WireTensor>>& seen) : seen_(seen) {
    WireTensorSpec ids{"input_ids", WireType::kInt64, {-1, -1}};
    ids.values = {5, 9};
    WireTensorSpec mask{"attention_mask", WireType::kInt64, {-1, -1}};
    mask.values = {1, 2};
    signature_.inputs = {ids, mask};
    signature_.outputs = {{"output0", WireType::kInt64, {-1, -1}}};
  }
  const ModelSignature& signature() const override { return signature_; }
  std::vector<std::vector<WireTensor>> run(
      const std::vector<const InferenceRequest*>& batch) override {
    std::vector<std::vector<WireTensor>> out;
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto* r : batch) {
      seen_.push_back(r->inputs);
      WireTensor t = r->inputs[0];
      t.name = "output0";
      out.push_back({t});
    }
    return out;
  }

 private:
  std::vector<std::vector<WireTensor>>& seen_;
  ModelSignature signature_;
  std::mutex mutex_;
};

std::vector<std::int64_t> values_of(const WireTensor& t) {
  std::vector<std::int64_t> v(t.bytes.size() / sizeof(std::int64_t));
  std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

// Issue 84: load sent ids and masks of zeros (every request an all-padding sentence). It draws
// token ids from the range the server's metadata says (its --input spec's), and a mask of ones;
// with --inputs-file it replays real samples, by name, in the file's order.
TEST(LoadGeneratorTest, TokenIdsComeFromTheServersRangeAndRealSamplesAreReplayed) {
  std::vector<std::vector<WireTensor>> seen;
  SteadyTimeSource clock;
  ServerOptions so;
  so.port = 0;
  so.model_name = "tokens";
  std::vector<std::unique_ptr<ModelRunner>> runners;
  runners.push_back(std::make_unique<RecordingRunner>(seen));
  InferenceServer server(so, std::move(runners), clock);
  const int port = server.bind();
  auto done = std::async(std::launch::async, [&] { server.serve(); });
  LoadOptions o = open_loop("http://127.0.0.1:" + std::to_string(port), 100, 0.3);
  o.model = "tokens";
  o.lengths = parse_dim_option("S=4..12").distribution;
  const LoadRun drawn = run_load(o);
  EXPECT_EQ(ok_count(drawn), drawn.records.size());
  ASSERT_FALSE(seen.empty());
  std::set<std::int64_t> ids;
  for (const auto& request : seen) {
    for (const auto v : values_of(request[0])) ids.insert(v);
    for (const auto v : values_of(request[1])) EXPECT_EQ(v, 1) << "a mask of ones";
  }
  EXPECT_GE(*ids.begin(), 5);
  EXPECT_LE(*ids.rbegin(), 8);
  EXPECT_GT(ids.size(), 1u) << "drawn, not one value";
  // The fixture's 48 real samples (the mask first in each dict), in order, of their own lengths.
  seen.clear();
  o.lengths.reset();
  o.inputs_file = testing::fixture("token_samples.pt");
  o.concurrency = 1;
  o.arrivals.duration_s = 0.5;
  const LoadRun replayed = run_load(o);
  ASSERT_GE(seen.size(), 48u);
  ASSERT_GE(replayed.records.size(), 48u);
  for (std::size_t i = 0; i < 48; ++i) {
    const std::int64_t n = 3 + static_cast<std::int64_t>(i * 37) % 60;
    EXPECT_EQ(seen[i][0].shape, (std::vector<std::int64_t>{1, n})) << "sample " << i;
    EXPECT_EQ(values_of(seen[i][1]), std::vector<std::int64_t>(static_cast<std::size_t>(n), 1));
  }
  for (const auto& r : replayed.records) EXPECT_GT(r.length, 0) << "each sample's own length";
  // A file of batched inputs, or one whose inputs the server lacks: refused, naming it.
  o.inputs_file = testing::fixture("inputs_pair.pt");
  try {
    run_load(o);
    ADD_FAILURE() << "a file of batched inputs was replayed";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("holds batched inputs, not samples"), std::string::npos)
        << e.what();
  }
  server.stop();
  done.get();
}

TEST(LoadGeneratorTest, BadOptionsAreRefusedNamingThem) {
  LoadOptions o = open_loop("localhost:8000", 10, 1);
  EXPECT_THROW(validate(o), UsageError);
  o.url = "http://127.0.0.1:8000";
  o.timeout_s = 0;
  EXPECT_THROW(validate(o), UsageError);
  o.timeout_s = 1;
  o.arrivals.duration_s = 0;
  EXPECT_THROW(validate(o), UsageError);
  o.arrivals.duration_s = 1;
  o.model.clear();
  EXPECT_THROW(validate(o), UsageError);
  o.model = "m";
  EXPECT_NO_THROW(validate(o));
  o.lengths = parse_dim_option("S=4..8").distribution;
  o.inputs_file = "samples.pt";
  EXPECT_THROW(validate(o), UsageError) << "real samples bring their own lengths";
}

}  // namespace
}  // namespace torchperf

#include "torchperf/serve/inference_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "torchperf/error.h"
#include "torchperf/serve/inference_request.h"

namespace torchperf {
namespace {

using nlohmann::json;

std::vector<WireTensorSpec> vector_input(std::int64_t width) {
  return {{"x", WireType::kFp32, {-1, width}}};
}

// A runner that waits at a gate before each batch, records batch sizes, and throws on a batch
// holding a request whose first value is negative.
class GatedRunner final : public ModelRunner {
 public:
  explicit GatedRunner(std::int64_t width) : echo_(vector_input(width)) {}
  const ModelSignature& signature() const override { return echo_.signature(); }
  std::vector<std::vector<WireTensor>> run(
      const std::vector<const InferenceRequest*>& batch) override {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ++waiting_;
      changed_.notify_all();
      changed_.wait(lock, [&] { return open_; });
      --waiting_;
      sizes_.push_back(batch.size());
    }
    for (const auto* r : batch) {
      float first = 0;
      std::memcpy(&first, r->inputs[0].bytes.data(), sizeof first);
      if (first < 0) throw std::runtime_error("negative input");
    }
    return echo_.run(batch);
  }
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  void wait_until_running() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return waiting_ > 0; });
  }
  std::vector<std::size_t> sizes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return sizes_;
  }

 private:
  EchoRunner echo_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = true;
  int waiting_ = 0;
  std::vector<std::size_t> sizes_;

 public:
  void close_gate() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = false;
  }
};

// A server on a free loopback port, serving in a thread until the fixture ends.
class Serving {
 public:
  explicit Serving(std::vector<std::unique_ptr<ModelRunner>> instances,
                   ServerOptions options = {}) {
    options.port = 0;
    options.model_name = "m";
    server_ = std::make_unique<InferenceServer>(options, std::move(instances), clock_);
    port_ = server_->bind();
    done_ = std::async(std::launch::async, [this] { server_->serve(); });
  }
  ~Serving() { stop(); }
  void stop() {
    server_->stop();
    if (done_.valid()) done_.get();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(20, 0);
    return c;
  }
  InferenceServer& server() { return *server_; }
  int port() const { return port_; }

 private:
  SteadyTimeSource clock_;
  std::unique_ptr<InferenceServer> server_;
  int port_ = 0;
  std::future<void> done_;
};

std::vector<std::unique_ptr<ModelRunner>> echo(std::int64_t width = 3) {
  std::vector<std::unique_ptr<ModelRunner>> v;
  v.push_back(std::make_unique<EchoRunner>(vector_input(width)));
  return v;
}

WireTensor vector_tensor(std::vector<float> values) {
  WireTensor t;
  t.name = "x";
  t.type = WireType::kFp32;
  t.shape = {1, static_cast<std::int64_t>(values.size())};
  t.bytes.resize(values.size() * sizeof(float));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

httplib::Result post(httplib::Client& c, const EncodedRequest& r, const std::string& model = "m") {
  httplib::Headers headers;
  if (r.json_length)
    headers.emplace("Inference-Header-Content-Length", std::to_string(*r.json_length));
  return c.Post(("/v2/models/" + model + "/infer").c_str(), headers, r.body, "application/json");
}

std::string error_of(const httplib::Result& r) { return json::parse(r->body).at("error"); }

TEST(InferenceServerTest, AnswersHealthReadinessAndTheModelsMetadata) {
  Serving s(echo());
  auto c = s.client();
  EXPECT_EQ(c.Get("/v2/health/live")->status, 200);
  EXPECT_EQ(c.Get("/v2/health/ready")->status, 200);
  EXPECT_EQ(c.Get("/v2/models/m/ready")->status, 200);
  const auto meta = c.Get("/v2/models/m");
  ASSERT_EQ(meta->status, 200);
  const ModelMetadata m = parse_model_metadata(meta->body);
  EXPECT_EQ(m.name, "m");
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].shape, (std::vector<std::int64_t>{-1, 3}));
  EXPECT_EQ(m.outputs[0].name, "output0");
  EXPECT_EQ(json::parse(c.Get("/v2")->body).at("extensions")[0], "binary_tensor_data");
}

TEST(InferenceServerTest, InfersFromJsonDataAndAnswersWithJsonData) {
  Serving s(echo());
  auto c = s.client();
  const auto r = post(c, encode_inference_request({vector_tensor({1, 2, 3})}, false, false));
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j.at("model_name"), "m");
  EXPECT_EQ(j.at("outputs")[0].at("data"), json::array({1.0, 2.0, 3.0}));
  EXPECT_EQ(j.at("outputs")[0].at("shape"), json::array({1, 3}));
}

TEST(InferenceServerTest, InfersFromBinaryDataAndAnswersWithBinaryOutputs) {
  Serving s(echo());
  auto c = s.client();
  const auto r = post(c, encode_inference_request({vector_tensor({4, 5, 6})}, true, true));
  ASSERT_EQ(r->status, 200) << r->body;
  const std::size_t header = std::stoul(r->get_header_value("Inference-Header-Content-Length"));
  ASSERT_EQ(r->body.size(), header + 3 * sizeof(float));
  float values[3];
  std::memcpy(values, r->body.data() + header, sizeof values);
  EXPECT_EQ(values[2], 6.0f);
  EXPECT_EQ(json::parse(r->body.substr(0, header))
                .at("outputs")[0]
                .at("parameters")
                .at("binary_data_size"),
            12);
}

TEST(InferenceServerTest, AMalformedBodyGets400NamingTheProblemAndTheServerGoesOn) {
  Serving s(echo());
  auto c = s.client();
  const auto bad = c.Post("/v2/models/m/infer", "{\"inputs\": [", "application/json");
  ASSERT_EQ(bad->status, 400);
  EXPECT_NE(error_of(bad).find("not JSON"), std::string::npos);
  const auto truncated =
      post(c, {encode_inference_request({vector_tensor({1, 2, 3})}, true, false).body.substr(0, 70),
               encode_inference_request({vector_tensor({1, 2, 3})}, true, false).json_length});
  EXPECT_EQ(truncated->status, 400);
  const auto header = c.Post("/v2/models/m/infer", {{"Inference-Header-Content-Length", "x"}}, "{}",
                             "application/json");
  EXPECT_EQ(header->status, 400);
  EXPECT_NE(error_of(header).find("Inference-Header-Content-Length 'x'"), std::string::npos);
  EXPECT_EQ(post(c, encode_inference_request({vector_tensor({1, 2, 3})}, false, false))->status,
            200);
}

TEST(InferenceServerTest, AWrongShapeDatatypeOrCountGets400) {
  Serving s(echo());
  auto c = s.client();
  const auto shape = post(c, encode_inference_request({vector_tensor({1, 2})}, false, false));
  ASSERT_EQ(shape->status, 400);
  EXPECT_NE(error_of(shape).find("expected shape [N,3], got [1,2]"), std::string::npos);
  WireTensor ints = vector_tensor({1, 2, 3});
  ints.type = WireType::kInt32;
  const auto type = post(c, encode_inference_request({ints}, true, false));
  EXPECT_NE(error_of(type).find("expected datatype FP32, got INT32"), std::string::npos);
  const auto count = post(
      c,
      encode_inference_request({vector_tensor({1, 2, 3}), vector_tensor({1, 2, 3})}, false, false));
  EXPECT_NE(error_of(count).find("takes 1 input, the request has 2"), std::string::npos);
}

// Multiplies every value by 1e30: finite inputs above 1e9 overflow to Inf in its answer.
class OverflowingRunner final : public ModelRunner {
 public:
  const ModelSignature& signature() const override { return echo_.signature(); }
  std::vector<std::vector<WireTensor>> run(
      const std::vector<const InferenceRequest*>& batch) override {
    auto answers = echo_.run(batch);
    for (auto& outputs : answers)
      for (auto& t : outputs)
        for (std::size_t at = 0; at + 4 <= t.bytes.size(); at += 4) {
          float v;
          std::memcpy(&v, t.bytes.data() + at, 4);
          v *= 1e30f;
          std::memcpy(t.bytes.data() + at, &v, 4);
        }
    return answers;
  }

 private:
  EchoRunner echo_{vector_input(3)};
};

TEST(InferenceServerTest, NeverAnswers200WithAWrongInputNameOverflowOrNonFiniteOutput) {
  std::vector<std::unique_ptr<ModelRunner>> runners;
  runners.push_back(std::make_unique<OverflowingRunner>());
  Serving s(std::move(runners));
  auto c = s.client();
  WireTensor renamed = vector_tensor({1, 2, 3});
  renamed.name = "y";
  const auto name = post(c, encode_inference_request({renamed}, false, false));
  ASSERT_EQ(name->status, 400);
  EXPECT_EQ(error_of(name), "input 'y' is not one of the model's inputs (expected x)");
  const auto overflow = c.Post(
      "/v2/models/m/infer",
      R"({"inputs": [{"name": "x", "shape": [1, 3], "datatype": "FP32", "data": [1, 2, 1e39]}]})",
      "application/json");
  ASSERT_EQ(overflow->status, 400);
  EXPECT_NE(error_of(overflow).find("1e+39 overflows FP32"), std::string::npos);
  const auto nonfinite = post(c, encode_inference_request({vector_tensor({1, 2e10f, 3})}, false,
                                                          false));
  ASSERT_EQ(nonfinite->status, 500);
  EXPECT_NE(error_of(nonfinite).find("output 'output0' has 1 NaN/Inf value of 3"),
            std::string::npos)
      << error_of(nonfinite);
  EXPECT_EQ(post(c, encode_inference_request({vector_tensor({1, 2, 3})}, false, false))->status,
            200);
}

TEST(InferenceServerTest, APostWithoutABodyIsRefusedAtOnce) {
  Serving s(echo());
  // What `curl -X POST URL` sends: no Content-Length, no body. httplib would read until the
  // connection closes; the server answers before reading.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(s.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string request = "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  timeval two_seconds{2, 0};  // well under httplib's 5 s read timeout
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &two_seconds, sizeof two_seconds);
  std::string answer;  // the headers and the body may come in two writes
  char buf[1024];
  ssize_t n = 0;
  while (answer.find("\"}") == std::string::npos && (n = ::recv(fd, buf, sizeof buf, 0)) > 0)
    answer.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  ASSERT_FALSE(answer.empty()) << "no answer within 2 s";
  EXPECT_EQ(answer.rfind("HTTP/1.1 411", 0), 0u) << answer;
  EXPECT_NE(answer.find("the request has no body"), std::string::npos) << answer;
}

TEST(InferenceServerTest, AnUnknownModelOrPathGets404) {
  Serving s(echo());
  auto c = s.client();
  const auto model =
      post(c, encode_inference_request({vector_tensor({1, 2, 3})}, false, false), "other");
  ASSERT_EQ(model->status, 404);
  EXPECT_NE(error_of(model).find("model 'other' is not served here"), std::string::npos);
  EXPECT_EQ(c.Get("/v2/models/other")->status, 404);
  const auto path = c.Get("/v1/nothing");
  ASSERT_EQ(path->status, 404);
  EXPECT_NE(error_of(path).find("no such endpoint"), std::string::npos);
}

TEST(InferenceServerTest, ABodyOverTheLimitGets413) {
  ServerOptions o;
  o.max_body_bytes = 1000;
  Serving s(echo(), o);
  auto c = s.client();
  const auto r = c.Post("/v2/models/m/infer", std::string(5000, ' '), "application/json");
  ASSERT_EQ(r->status, 413);
  EXPECT_NE(error_of(r).find("limit of 1000 bytes"), std::string::npos);
}

TEST(InferenceServerTest, ALargeFormEncodedBodyIsRefusedForItsTypeNotItsSize) {
  Serving s(echo());
  auto c = s.client();
  const auto r = c.Post("/v2/models/m/infer", std::string(16 * 1024, ' '),
                        "application/x-www-form-urlencoded");
  ASSERT_EQ(r->status, 415);
  EXPECT_NE(error_of(r).find("sent as application/x-www-form-urlencoded"), std::string::npos)
      << error_of(r);
  EXPECT_NE(error_of(r).find("Content-Type: application/json"), std::string::npos) << error_of(r);
  EXPECT_EQ(error_of(r).find("limit"), std::string::npos) << error_of(r);
}

TEST(InferenceServerTest, AFullQueueGets503AtOnce) {
  auto runner = std::make_unique<GatedRunner>(3);
  GatedRunner* gate = runner.get();
  gate->close_gate();
  std::vector<std::unique_ptr<ModelRunner>> v;
  v.push_back(std::move(runner));
  ServerOptions o;
  o.batching = {1, 0.0, 1};  // one request computing, one waiting
  Serving s(std::move(v), o);
  const auto body = encode_inference_request({vector_tensor({1, 2, 3})}, false, false);
  auto first = std::async(std::launch::async, [&] {
    auto c = s.client();
    return post(c, body)->status;
  });
  gate->wait_until_running();  // the first is in the model
  auto second = std::async(std::launch::async, [&] {
    auto c = s.client();
    return post(c, body)->status;
  });
  // Once the second waits in the queue (its size is 1), a third finds it full.
  auto c = s.client();
  for (int attempt = 0; attempt < 2000; ++attempt) {
    if (c.Get("/metrics")->body.find("torchperf_queue_depth 1\n") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto refused = post(c, body);
  const int third = refused->status;
  EXPECT_NE(error_of(refused).find("the queue is full"), std::string::npos);
  EXPECT_EQ(third, 503);
  gate->open();
  EXPECT_EQ(first.get(), 200);
  EXPECT_EQ(second.get(), 200);
}

TEST(InferenceServerTest, ABatchWhoseModelCallThrowsGets500AndOtherBatchesAreServed) {
  auto runner = std::make_unique<GatedRunner>(3);
  std::vector<std::unique_ptr<ModelRunner>> v;
  v.push_back(std::move(runner));
  Serving s(std::move(v));
  auto c = s.client();
  const auto bad = post(c, encode_inference_request({vector_tensor({-1, 2, 3})}, false, false));
  ASSERT_EQ(bad->status, 500);
  EXPECT_NE(error_of(bad).find("negative input"), std::string::npos);
  EXPECT_EQ(post(c, encode_inference_request({vector_tensor({1, 2, 3})}, false, false))->status,
            200);
}

TEST(InferenceServerTest, RequestsWaitingTogetherRunAsOneBatch) {
  auto runner = std::make_unique<GatedRunner>(3);
  GatedRunner* gate = runner.get();
  std::vector<std::unique_ptr<ModelRunner>> v;
  v.push_back(std::move(runner));
  ServerOptions o;
  o.batching = {4, 10.0, 16};  // a batch runs full, or after 10 s
  Serving s(std::move(v), o);
  const auto body = encode_inference_request({vector_tensor({1, 2, 3})}, false, false);
  std::vector<std::future<int>> answers;
  for (int i = 0; i < 4; ++i)
    answers.push_back(std::async(std::launch::async, [&] {
      auto c = s.client();
      return post(c, body)->status;
    }));
  for (auto& a : answers) EXPECT_EQ(a.get(), 200);
  EXPECT_EQ(gate->sizes(), (std::vector<std::size_t>{4}));
}

TEST(InferenceServerTest, TheBatchSizeCountsRequestsPerModelCallNotPerDequeue) {
  // Issue 63: two requests of other lengths dequeued together run as two calls where lengths do
  // not merge (the echo model pads nothing), and the histogram says two calls of one.
  std::vector<std::unique_ptr<ModelRunner>> v;
  v.push_back(std::make_unique<EchoRunner>(vector_input(-1)));
  ServerOptions o;
  o.batching = {2, 10.0, 16};  // the two run together as soon as both are queued
  Serving s(std::move(v), o);
  std::vector<std::future<int>> answers;
  for (const int width : {3, 5})
    answers.push_back(std::async(std::launch::async, [&s, width] {
      auto c = s.client();
      const auto body =
          encode_inference_request({vector_tensor(std::vector<float>(width, 1.0f))}, false, false);
      return post(c, body)->status;
    }));
  for (auto& a : answers) EXPECT_EQ(a.get(), 200);
  const std::string metrics = s.client().Get("/metrics")->body;
  EXPECT_NE(metrics.find("torchperf_batch_size_bucket{le=\"1\"} 2"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("torchperf_bucket_requests_total{bucket=\"all\"} 2"), std::string::npos)
      << metrics;
}

TEST(InferenceServerTest, StoppingFinishesWhatIsQueuedThenReturns) {
  auto runner = std::make_unique<GatedRunner>(3);
  GatedRunner* gate = runner.get();
  gate->close_gate();
  std::vector<std::unique_ptr<ModelRunner>> v;
  v.push_back(std::move(runner));
  Serving s(std::move(v));
  const auto body = encode_inference_request({vector_tensor({1, 2, 3})}, false, false);
  auto answer = std::async(std::launch::async, [&] {
    auto c = s.client();
    return post(c, body)->status;
  });
  gate->wait_until_running();
  auto stopped = std::async(std::launch::async, [&] { s.stop(); });
  EXPECT_EQ(stopped.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  gate->open();
  EXPECT_EQ(answer.get(), 200);
  stopped.get();
  EXPECT_FALSE(s.client().Get("/v2/health/live"));  // no longer listening
}

TEST(InferenceServerTest, MetricsCountResponsesBatchesAndLatencies) {
  Serving s(echo());
  auto c = s.client();
  post(c, encode_inference_request({vector_tensor({1, 2, 3})}, false, false));
  post(c, encode_inference_request({vector_tensor({1, 2})}, false, false));
  const auto m = c.Get("/metrics");
  ASSERT_EQ(m->status, 200);
  EXPECT_NE(m->body.find("code=\"200\"} 1"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("code=\"400\"} 1"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("_count 1"), std::string::npos);
}

TEST(InferenceServerTest, BadSettingsAreRefusedNamingThem) {
  ServerOptions o;
  o.port = 70000;
  SteadyTimeSource clock;
  EXPECT_THROW(InferenceServer(o, echo(), clock), UsageError);
  EXPECT_THROW(InferenceServer(ServerOptions{}, {}, clock), UsageError);
  std::vector<std::unique_ptr<ModelRunner>> two = echo(3);
  two.push_back(std::make_unique<EchoRunner>(vector_input(4)));
  EXPECT_THROW(InferenceServer(ServerOptions{}, std::move(two), clock), UsageError);
}

TEST(InferenceServerTest, APortInUseIsARuntimeFailureNamingIt) {
  Serving first(echo());
  const int port = first.port();
  ServerOptions o;
  o.port = port;
  SteadyTimeSource clock;
  InferenceServer second(o, echo(), clock);
  try {
    second.bind();
    FAIL() << "bound a port in use";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos);
  }
}

TEST(InferenceServerTest, StopBeforeServeReturnsAtOnce) {
  SteadyTimeSource clock;
  ServerOptions o;
  o.port = 0;
  InferenceServer server(o, echo(), clock);
  server.bind();
  server.stop();
  const auto start = std::chrono::steady_clock::now();
  server.serve();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace torchperf

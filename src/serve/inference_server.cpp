#include "torchperf/serve/inference_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "torchperf/error.h"
#include "torchperf/serve/batch_queue.h"
#include "torchperf/serve/inference_response.h"

namespace torchperf {
namespace {

constexpr const char* kJson = "application/json";
constexpr const char* kHeaderLength = "Inference-Header-Content-Length";

struct Answer {
  int status = 200;
  std::vector<WireTensor> outputs;
  std::string error;
  double queue_s = 0;
  double compute_s = 0;
};

struct Pending {
  InferenceRequest request;
  QueuedSize size;
  std::promise<Answer> answer;
  Clock::time_point arrived;
};

std::string bucket_label(const BatchingPolicy& policy, std::size_t bucket) {
  return policy.edges.empty() ? "all" : std::to_string(policy.edges[bucket]);
}

using Job = std::unique_ptr<Pending>;

bool is_form_encoded(const httplib::Request& req) {
  return req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0;
}

// The body's declared length; 0 when absent or unreadable (other checks say so).
std::size_t request_length(const httplib::Request& req) {
  try {
    return static_cast<std::size_t>(std::stoull(req.get_header_value("Content-Length")));
  } catch (const std::exception&) {
    return 0;
  }
}

bool same_signature(const ModelSignature& a, const ModelSignature& b) {
  const auto same = [](const std::vector<WireTensorSpec>& x, const std::vector<WireTensorSpec>& y) {
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (x[i].name != y[i].name || x[i].type != y[i].type || x[i].shape != y[i].shape)
        return false;
    return true;
  };
  return same(a.inputs, b.inputs) && same(a.outputs, b.outputs);
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(encode_error(message), kJson);
}

}  // namespace

void validate(const ServerOptions& o) {
  if (o.host.empty()) throw UsageError("--host: expected an address such as 127.0.0.1");
  if (o.port < 0 || o.port > 65535)
    throw UsageError(fmt::format("--port {}: expected 0-65535 (0: any free port)", o.port));
  if (o.model_name.empty() || o.model_name.find_first_of("/?# ") != std::string::npos)
    throw UsageError("--name '" + o.model_name +
                     "': expected a name without '/', '?', '#' or spaces");
  if (o.max_body_bytes == 0) throw UsageError("--max-body: expected a positive size");
  validate(o.batching);
}

struct InferenceServer::Impl {
  Impl(ServerOptions o, std::vector<std::unique_ptr<ModelRunner>> i, TimeSource& c)
      : options(std::move(o)),
        instances(std::move(i)),
        clock(c),
        queue(queue_policy(options.batching, instances.front()->signature()), clock),
        metrics(options.batching.max_batch) {}

  ServerOptions options;
  std::vector<std::unique_ptr<ModelRunner>> instances;
  TimeSource& clock;
  BatchQueue<Job> queue;
  ServerMetrics metrics;
  httplib::Server http;
  std::mutex mutex;
  std::condition_variable changed;
  bool stop_requested = false;
  bool listening_ended = false;
  std::atomic<bool> ready{false};
  socket_t listening_socket = INVALID_SOCKET;  // the socket httplib listens on (set at bind)

  const ModelSignature& signature() const { return instances.front()->signature(); }
  std::size_t http_threads() const {
    if (options.http_threads > 0) return options.http_threads;
    return options.batching.max_queue + instances.size() * options.batching.max_batch + 16;
  }

  void route();
  void infer(const httplib::Request& req, httplib::Response& res);
  void run_instance(ModelRunner& runner);
  bool model_matches(const httplib::Request& req, httplib::Response& res) const;
};

bool InferenceServer::Impl::model_matches(const httplib::Request& req,
                                          httplib::Response& res) const {
  const std::string name = req.matches[1];
  if (name == options.model_name) return true;
  send_error(res, 404,
             fmt::format("model '{}' is not served here; this server serves '{}'", name,
                         options.model_name));
  return false;
}

void InferenceServer::Impl::route() {
  http.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"live\":true}", kJson);
  });
  http.Get("/v2/health/ready", [this](const httplib::Request&, httplib::Response& res) {
    res.status = ready ? 200 : 503;
    res.set_content(ready ? "{\"ready\":true}" : "{\"ready\":false}", kJson);
  });
  http.Get("/v2", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(nlohmann::json{{"name", "torchperf"},
                                   {"version", options.version},
                                   {"extensions", {"binary_tensor_data"}}}
                        .dump(),
                    kJson);
  });
  http.Get(R"(/v2/models/([^/]+)(?:/versions/1)?)", [this](const httplib::Request& req,
                                                           httplib::Response& res) {
    if (!model_matches(req, res)) return;
    res.set_content(
        encode_model_metadata(options.model_name, signature().inputs, signature().outputs), kJson);
  });
  http.Get(R"(/v2/models/([^/]+)(?:/versions/1)?/ready)",
           [this](const httplib::Request& req, httplib::Response& res) {
             if (!model_matches(req, res)) return;
             res.status = ready ? 200 : 503;
             res.set_content(ready ? "{\"ready\":true}" : "{\"ready\":false}", kJson);
           });
  http.Post(R"(/v2/models/([^/]+)(?:/versions/1)?/infer)",
            [this](const httplib::Request& req, httplib::Response& res) { infer(req, res); });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    metrics.set_queue_depth(queue.size());
    res.set_content(metrics.render(), "text/plain; version=0.0.4");
  });
  // A POST without Content-Length (curl -X POST with no data) would have its body read until
  // the connection closes, answered only at the read timeout: refused before any body is read.
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // httplib reads a form-encoded body (curl -d's default type) only up to 8 KB and refuses a
    // longer one as too large: the cause is its type, said before the body is read.
    if (req.method == "POST" && is_form_encoded(req) &&
        request_length(req) > CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH) {
      send_error(res, 415,
                 "the body was sent as " + req.get_header_value("Content-Type") +
                     ", which this server reads up to 8 KB: send an inference request as "
                     "Content-Type: application/json (curl -H 'Content-Type: application/json')");
      metrics.count_response(415);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method != "POST" || req.has_header("Content-Length") ||
        req.has_header("Transfer-Encoding"))
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, 411,
               "the request has no body (no Content-Length header): expected an inference "
               "request, a JSON object with \"inputs\"");
    metrics.count_response(411);
    return httplib::Server::HandlerResponse::Handled;
  });
  // Everything refused before a handler ran (404 for an unknown path, 413 for a body over the
  // limit, 400 for a request httplib cannot read) still gets the protocol's JSON error body.
  http.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                     httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message;
    // httplib also refuses an application/x-www-form-urlencoded body over 8 KB (curl -d sends
    // that type) with 413, and this handler does not see its headers.
    if (res.status == 413)
      message = fmt::format(
          "the body is over the server's limit of {} bytes, or was sent as "
          "application/x-www-form-urlencoded (8 KB at most): send Content-Type: application/json",
          options.max_body_bytes);
    else if (res.status == 404)
      message = fmt::format("no such endpoint: {} {}", req.method, req.path);
    else
      message = fmt::format("the request could not be read (HTTP {})", res.status);
    res.set_content(encode_error(message), kJson);
    metrics.count_response(res.status);
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler(
      [this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string message = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          message = e.what();
        } catch (...) {
        }
        send_error(res, 500, message);
        metrics.count_response(500);
      });
}

void InferenceServer::Impl::infer(const httplib::Request& req, httplib::Response& res) {
  const auto start = clock.now();
  if (!model_matches(req, res)) return metrics.count_response(404);
  auto job = std::make_unique<Pending>();
  try {
    std::optional<std::size_t> json_length;
    if (req.has_header(kHeaderLength)) {
      const std::string text = req.get_header_value(kHeaderLength);
      std::size_t used = 0;
      unsigned long long n = 0;
      try {
        n = std::stoull(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != text.size() || text.empty() || text[0] == '-')
        throw RequestError(fmt::format("{} '{}': expected a byte count", kHeaderLength, text));
      json_length = static_cast<std::size_t>(n);
    }
    job->request = parse_inference_request(req.body, json_length);
    conform_request(signature(), job->request);
  } catch (const RequestError& e) {
    send_error(res, 400, e.what());
    return metrics.count_response(400);
  }
  job->size = queued_size(signature(), job->request);
  if (const auto refused = refuse_size(queue.policy(), job->size)) {
    send_error(res, refused->status, refused->message);
    return metrics.count_response(refused->status);
  }
  const std::string id = job->request.id;
  const bool binary = job->request.binary_outputs;
  std::future<Answer> answer = job->answer.get_future();
  job->arrived = start;
  const QueuedSize size = job->size;
  if (!queue.push(std::move(job), size)) {
    send_error(res, 503,
               fmt::format("the queue is full ({} requests waiting); try again later",
                           options.batching.max_queue));
    return metrics.count_response(503);
  }
  metrics.set_queue_depth(queue.size());
  const Answer a = answer.get();
  if (a.status != 200) {
    send_error(res, a.status, a.error);
    return metrics.count_response(a.status);
  }
  const EncodedResponse encoded =
      encode_inference_response(options.model_name, id, a.outputs, binary);
  if (encoded.json_length) {
    res.set_header(kHeaderLength, std::to_string(*encoded.json_length));
    res.set_content(encoded.body, "application/octet-stream");
  } else {
    res.set_content(encoded.body, kJson);
  }
  metrics.count_response(200);
  metrics.observe_request(a.queue_s, a.compute_s, to_seconds(clock.now() - start));
}

BatchingPolicy queue_policy(BatchingPolicy policy, const ModelSignature& signature) {
  if (policy.edges.empty()) policy.edges = signature.lengths.edges;
  if (!policy.padded && signature.lengths.merge) policy.padded = signature.lengths.padded;
  if (policy.max_request_samples == 0)
    policy.max_request_samples = std::max(kRequestSamples, signature.batch_min);
  else if (policy.max_request_samples < signature.batch_min)
    throw UsageError(fmt::format("--max-client-batch {}: the model takes batches of at least {} "
                                 "(its torch.export program's range); expected {} or more",
                                 policy.max_request_samples, signature.batch_min,
                                 signature.batch_min));
  policy.memory.fixed_bytes = signature.call_memory.fixed_bytes;
  policy.memory.bytes_per_token = signature.call_memory.bytes_per_token;
  policy.memory.answer_bytes_per_token = signature.call_memory.answer_bytes_per_token;
  return policy;
}

void InferenceServer::Impl::run_instance(ModelRunner& runner) {
  runner.enter_thread();
  for (;;) {
    std::size_t bucket = 0;
    std::vector<Job> batch = queue.next_batch(&bucket);
    if (batch.empty()) break;
    const auto started = clock.now();
    metrics.set_queue_depth(queue.size());
    std::vector<const InferenceRequest*> requests;
    std::vector<QueuedSize> sizes;
    BucketCall call;
    for (const auto& job : batch) {
      requests.push_back(&job->request);
      sizes.push_back(job->size);
      call.queue_s += to_seconds(started - job->arrived);
      call.useful_tokens += job->size.samples * std::max<std::int64_t>(1, job->size.length);
    }
    call.requests = batch.size();
    call.padded_tokens = signature().lengths.merge
                             ? padded_tokens(queue.policy(), sizes, sizes.size())
                             : call.useful_tokens;
    // Per model call: the runner cuts a batch into calls by the batch range and, where lengths
    // do not merge, by size (split_by_batch_range), and so does this count.
    for (const auto& run : split_by_batch_range(signature(), requests))
      metrics.observe_batch(run.size());
    std::vector<std::vector<WireTensor>> outputs;
    std::string failure;
    const std::size_t off_plan = runner.off_plan_calls();
    try {
      outputs = runner.run(requests);
      if (outputs.size() != batch.size())
        failure = fmt::format("the model instance answered {} of {} requests", outputs.size(),
                              batch.size());
    } catch (const std::exception& e) {
      failure = e.what();
    }
    const double compute_s = to_seconds(clock.now() - started);
    call.off_plan = runner.off_plan_calls() - off_plan;
    metrics.observe_bucket(bucket_label(queue.policy(), bucket), call);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      Answer a;
      a.queue_s = to_seconds(started - batch[i]->arrived);
      a.compute_s = compute_s;
      if (failure.empty()) {
        a.outputs = select_outputs(batch[i]->request, std::move(outputs[i]));
        for (const auto& out : a.outputs)
          if (const std::size_t bad = count_nonfinite(out); bad > 0) {
            a.status = 500;
            a.error = fmt::format(
                "output '{}' has {} NaN/Inf value{} of {}: the model's result for these inputs "
                "is not a number (inputs out of the model's range?)",
                out.name, bad, bad == 1 ? "" : "s", out.bytes.size() / element_size(out.type));
            a.outputs.clear();
            break;
          }
      } else {
        a.status = 500;
        a.error = "the model failed on a batch of " + std::to_string(batch.size()) +
                  " requests: " + failure;
      }
      batch[i]->answer.set_value(std::move(a));
    }
  }
  runner.exit_thread();
}

InferenceServer::InferenceServer(ServerOptions options,
                                 std::vector<std::unique_ptr<ModelRunner>> instances,
                                 TimeSource& clock) {
  validate(options);
  if (instances.empty()) throw UsageError("--instances: expected at least one model instance");
  for (const auto& i : instances)
    if (!same_signature(i->signature(), instances.front()->signature()))
      throw UsageError("the model instances differ in their inputs or outputs");
  impl_ = std::make_unique<Impl>(std::move(options), std::move(instances), clock);
  Impl& s = *impl_;
  s.http.set_payload_max_length(s.options.max_body_bytes);
  // Without TCP_NODELAY a response written in two parts (headers, body) waits for the client's
  // delayed ACK: 40 ms added to a fraction of the answers.
  s.http.set_tcp_nodelay(true);
  // httplib's default sets SO_REUSEPORT, with which a second server binds a port in use and the
  // two share its connections. SO_REUSEADDR alone: a restart may reuse a port in TIME_WAIT.
  s.http.set_socket_options([&s](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    s.listening_socket = sock;
  });
  s.http.set_keep_alive_max_count(100000);
  const std::size_t threads = s.http_threads();
  s.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.route();
}

InferenceServer::~InferenceServer() { stop(); }

int InferenceServer::bind() {
  Impl& s = *impl_;
  const bool bound = s.options.port == 0
                         ? (s.options.port = s.http.bind_to_any_port(s.options.host)) > 0
                         : s.http.bind_to_port(s.options.host, s.options.port);
  if (!bound)
    throw RuntimeFailure(
        fmt::format("cannot listen on {}:{} (in use, or not an address of this "
                    "machine)",
                    s.options.host, s.options.port));
  // httplib 0.11 listens with a backlog of 5: 200 clients connecting at once saw 44 connections
  // reset before the accept loop took them (issue 84). Listening again on the same socket sets
  // the kernel's backlog to the system's largest; every connection is then accepted and answered
  // (a full queue answers 503).
  if (s.listening_socket != INVALID_SOCKET) ::listen(s.listening_socket, SOMAXCONN);
  return s.options.port;
}

void InferenceServer::serve() {
  Impl& s = *impl_;
  std::vector<std::thread> workers;
  for (auto& instance : s.instances)
    workers.emplace_back([&s, runner = instance.get()] { s.run_instance(*runner); });
  // httplib's stop() only takes once it is listening: keep asking until listening ends.
  std::thread stopper([&s] {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.changed.wait(lock, [&s] { return s.stop_requested || s.listening_ended; });
    while (!s.listening_ended) {
      lock.unlock();
      s.http.stop();
      lock.lock();
      s.changed.wait_for(lock, std::chrono::milliseconds(5), [&s] { return s.listening_ended; });
    }
  });
  bool stop_first = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    stop_first = s.stop_requested;
  }
  s.ready = !stop_first;
  if (!stop_first) s.http.listen_after_bind();
  s.ready = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.listening_ended = true;
  }
  s.changed.notify_all();
  stopper.join();
  // Every connection's handler has returned: what is queued belongs to nobody new. Drain it.
  s.queue.close();
  for (auto& w : workers) w.join();
}

void InferenceServer::stop() {
  if (!impl_) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop_requested = true;
  }
  impl_->changed.notify_all();
}

const ServerMetrics& InferenceServer::metrics() const { return impl_->metrics; }

}  // namespace torchperf

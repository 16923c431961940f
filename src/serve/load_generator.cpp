#include "torchperf/serve/load_generator.h"

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <thread>

#include "torchperf/error.h"
#include "torchperf/measure/clock.h"
#include "torchperf/serve/inference_request.h"
#include "torchperf/serve/request_samples.h"

namespace torchperf {
namespace {

constexpr const char* kHeaderLength = "Inference-Header-Content-Length";

template <typename T>
void put(WireTensor& t, std::size_t i, T v) {
  std::memcpy(t.bytes.data() + i * sizeof v, &v, sizeof v);
}

// Value i of t as its datatype holds it (16-bit floats: bf16 as a float's upper half; fp16
// left 0, which every model takes).
void put_value(WireTensor& t, std::size_t i, double v) {
  switch (t.type) {
    case WireType::kFp32: return put(t, i, static_cast<float>(v));
    case WireType::kFp64: return put(t, i, v);
    case WireType::kBf16: {
      const float f = static_cast<float>(v);
      std::uint32_t bits = 0;
      std::memcpy(&bits, &f, sizeof f);
      return put(t, i, static_cast<std::uint16_t>(bits >> 16));
    }
    case WireType::kInt64: return put(t, i, static_cast<std::int64_t>(v));
    case WireType::kInt32: return put(t, i, static_cast<std::int32_t>(v));
    case WireType::kInt16: return put(t, i, static_cast<std::int16_t>(v));
    case WireType::kInt8: return put(t, i, static_cast<std::int8_t>(v));
    case WireType::kUint8: return put(t, i, static_cast<std::uint8_t>(v));
    case WireType::kBool: return put(t, i, static_cast<std::uint8_t>(v != 0));
    case WireType::kFp16: return;
  }
}

bool integral(WireType t) {
  return t != WireType::kFp32 && t != WireType::kFp64 && t != WireType::kBf16 &&
         t != WireType::kFp16;
}

// Values a model takes: those its metadata says (`torchperf_values`: token ids drawn from the
// vocabulary, a mask of ones, issue 84), else unit normal floats and zeros for integers (a valid
// index into any table). A varying dimension past the batch takes length; the batch is 1.
WireTensor sample_tensor(const WireTensorSpec& spec, std::mt19937_64& rng, std::int64_t length = 1) {
  WireTensor t;
  t.name = spec.name;
  t.type = spec.type;
  std::size_t n = 1;
  for (std::size_t i = 0; i < spec.shape.size(); ++i) {
    const auto d = spec.shape[i];
    t.shape.push_back(d >= 0 ? d : i == 0 ? 1 : length);
    n *= static_cast<std::size_t>(t.shape.back());
  }
  t.bytes.assign(n * element_size(spec.type), 0);
  if (spec.values.size() == 2 && integral(spec.type)) {
    const auto low = static_cast<std::int64_t>(std::ceil(spec.values[0]));
    const auto high = std::max(low, static_cast<std::int64_t>(std::ceil(spec.values[1])) - 1);
    std::uniform_int_distribution<std::int64_t> draw(low, high);
    for (std::size_t i = 0; i < n; ++i) put_value(t, i, static_cast<double>(draw(rng)));
  } else if (spec.values.size() == 2) {
    std::uniform_real_distribution<double> draw(spec.values[0], spec.values[1]);
    for (std::size_t i = 0; i < n; ++i) put_value(t, i, draw(rng));
  } else if (!integral(spec.type)) {
    std::normal_distribution<double> normal;
    for (std::size_t i = 0; i < n; ++i) put_value(t, i, normal(rng));
  }
  return t;
}

struct Request {
  std::string path;
  httplib::Headers headers;
  std::string body;
  std::string content_type;
};

RequestOutcome outcome_of(const httplib::Result& result, double elapsed_s, double timeout_s) {
  if (!result) {
    const auto e = result.error();
    if (e == httplib::Error::ConnectionTimeout ||
        (e == httplib::Error::Read && elapsed_s >= 0.95 * timeout_s))
      return RequestOutcome::kTimeout;
    return RequestOutcome::kConnection;
  }
  if (result->status == 200) return RequestOutcome::kOk;
  if (result->status == 503) return RequestOutcome::kRejected;
  if (result->status >= 400 && result->status < 500) return RequestOutcome::kClientError;
  return RequestOutcome::kServerError;
}

// The protocol's {"error": "..."} body, or the status alone when the body is not one.
std::string error_message(const std::string& body, int status) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error") && j.at("error").is_string())
    return j.at("error").get<std::string>();
  return "HTTP " + std::to_string(status);
}

std::unique_ptr<httplib::Client> connect(const LoadOptions& o) {
  auto client = std::make_unique<httplib::Client>(o.url);
  client->set_keep_alive(true);
  client->set_tcp_nodelay(true);  // a request's headers and body must not wait for an ACK
  const auto timeout = std::chrono::duration<double>(o.timeout_s);
  client->set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  client->set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  client->set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  return client;
}

// Sent, answered and classified; the times are seconds from start.
// A closed loop has no schedule (scheduled_s < 0): a request is due when it is sent.
RequestRecord send(httplib::Client& client, const Request& r, const LoadOptions& o,
                   TimeSource& time, Clock::time_point start, double scheduled_s) {
  RequestRecord rec;
  rec.sent_s = to_seconds(time.now() - start);
  rec.scheduled_s = scheduled_s < 0 ? rec.sent_s : scheduled_s;
  const auto result = client.Post(r.path.c_str(), r.headers, r.body, r.content_type.c_str());
  rec.done_s = to_seconds(time.now() - start);
  rec.outcome = outcome_of(result, rec.done_s - rec.sent_s, o.timeout_s);
  if (result && result->status != 200) rec.error = error_message(result->body, result->status);
  return rec;
}

ModelSignature read_signature(const LoadOptions& o) {
  auto client = connect(o);
  const auto res = client->Get(("/v2/models/" + o.model).c_str());
  if (!res)
    throw RuntimeFailure(
        fmt::format("cannot reach the server at {}: {}", o.url,
                    res.error() == httplib::Error::Connection
                        ? std::string("connection refused (is torchperf serve running there?)")
                        : httplib::to_string(res.error())));
  if (res->status == 404)
    throw UsageError(fmt::format("--model '{}': the server at {} does not serve it ({})", o.model,
                                 o.url, res->body));
  if (res->status != 200)
    throw RuntimeFailure(fmt::format("the server at {} answered GET /v2/models/{} with HTTP {}",
                                     o.url, o.model, res->status));
  try {
    const ModelMetadata m = parse_model_metadata(res->body);
    return {m.inputs, m.outputs};
  } catch (const RequestError& e) {
    throw RuntimeFailure(fmt::format("the server at {}: {}", o.url, e.what()));
  }
}

// Whether the run should end early: the server refused a connection after having been reached.
struct Stop {
  std::atomic<bool> now{false};
  std::mutex mutex;
  std::string reason;
  void set(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex);
    if (reason.empty()) reason = why;
    now = true;
  }
};

}  // namespace

void validate(const LoadOptions& o) {
  static const std::regex url(R"(http://[^/:\s]+:[0-9]{1,5}/?)");
  if (!std::regex_match(o.url, url))
    throw UsageError("URL '" + o.url + "': expected http://HOST:PORT, e.g. http://127.0.0.1:8000");
  // A port past 65535 would be cut to 16 bits by the socket call and refused elsewhere.
  const auto colon = o.url.rfind(':');
  if (const long port = std::stol(o.url.substr(colon + 1)); port < 1 || port > 65535)
    throw UsageError("URL '" + o.url + "': port " + std::to_string(port) +
                     " is out of range (expected 1-65535)");
  if (o.model.empty()) throw UsageError("--model: expected the served model's name");
  if (!(o.timeout_s > 0) || !std::isfinite(o.timeout_s))
    throw UsageError(
        fmt::format("--timeout {}: expected a positive number of seconds", o.timeout_s));
  if (!(o.arrivals.duration_s > 0) || !std::isfinite(o.arrivals.duration_s))
    throw UsageError(fmt::format("--duration {}: expected a positive time", o.arrivals.duration_s));
  if (o.concurrency == 0 && o.connections == 0)
    throw UsageError("--connections: expected at least 1");
  if (o.concurrency > 4096 || o.connections > 4096)
    throw UsageError("--concurrency/--connections: at most 4096 clients");
  if (o.lengths && !o.inputs_file.empty())
    throw UsageError("--dim and --inputs-file: choose one (real samples bring their own lengths)");
}

LoadRun run_load(const LoadOptions& options, const LoadProgress& progress) {
  SteadyTimeSource time;
  return run_load(options, time, progress);
}

namespace {

// The requests a run sends: request i sends requests[order[i % n]], of lengths[i % n] (0: none).
// One request per distinct length (--dim), or one per real sample (--inputs-file).
struct RequestBook {
  std::vector<Request> requests;
  std::vector<std::size_t> order{0};
  std::vector<std::int64_t> lengths{0};
  const Request& request(std::size_t i) const { return requests[order[i % order.size()]]; }
  std::int64_t length(std::size_t i) const { return lengths[i % lengths.size()]; }
};

Request request_of(const LoadOptions& o, std::vector<WireTensor> inputs) {
  const bool binary =
      o.binary || std::any_of(inputs.begin(), inputs.end(), [](const WireTensor& t) {
        return t.type == WireType::kFp16 || t.type == WireType::kBf16;
      });
  const EncodedRequest encoded = encode_inference_request(inputs, binary, true);
  Request request;
  request.path = "/v2/models/" + o.model + "/infer";
  request.body = encoded.body;
  request.content_type = encoded.json_length ? "application/octet-stream" : "application/json";
  if (encoded.json_length)
    request.headers.emplace(kHeaderLength, std::to_string(*encoded.json_length));
  return request;
}

Request generated_request(const LoadOptions& o, const LoadRun& run, std::mt19937_64& rng,
                          std::int64_t length) {
  std::vector<WireTensor> inputs;
  for (const auto& spec : run.signature.inputs) inputs.push_back(sample_tensor(spec, rng, length));
  return request_of(o, std::move(inputs));
}

RequestBook book_requests(const LoadOptions& o, const LoadRun& run, std::size_t scheduled) {
  std::mt19937_64 rng(o.arrivals.seed);
  RequestBook book;
  if (!o.inputs_file.empty()) {
    book.order.clear();
    book.lengths.clear();
    for (auto& sample : request_samples(o.inputs_file, run.signature.inputs)) {
      book.order.push_back(book.requests.size());
      book.lengths.push_back(sample.length);
      book.requests.push_back(request_of(o, std::move(sample.inputs)));
    }
    return book;
  }
  if (!o.lengths) {
    book.requests.push_back(generated_request(o, run, rng, 1));
    return book;
  }
  const bool varies = std::any_of(
      run.signature.inputs.begin(), run.signature.inputs.end(), [](const WireTensorSpec& s) {
        return std::any_of(s.shape.begin() + (s.shape.empty() ? 0 : 1), s.shape.end(),
                           [](std::int64_t d) { return d < 0; });
      });
  if (!varies)
    throw UsageError(fmt::format("--dim {}: model '{}' at {} has no dimension that varies past "
                                 "the batch (serve it with --dim)",
                                 o.lengths->text, o.model, o.url));
  book.lengths = o.lengths->draw(std::max<std::size_t>(scheduled, 4096), o.arrivals.seed);
  book.order.clear();
  std::map<std::int64_t, std::size_t> built;
  for (const auto l : book.lengths) {
    if (!built.count(l)) {
      built[l] = book.requests.size();
      book.requests.push_back(generated_request(o, run, rng, l));
    }
    book.order.push_back(built[l]);
  }
  return book;
}

// Every client connects before the clock starts: connection set-up is not the server's latency,
// and a burst of connects at the start would overflow a small listen backlog.
std::vector<std::unique_ptr<httplib::Client>> connect_clients(const LoadOptions& o,
                                                              std::size_t clients) {
  std::vector<std::unique_ptr<httplib::Client>> connected;
  for (std::size_t c = 0; c < clients; ++c) {
    connected.push_back(connect(o));
    if (!connected.back()->Get("/v2/health/live"))
      throw RuntimeFailure(fmt::format("cannot open connection {} of {} to the server at {}", c + 1,
                                       clients, o.url));
  }
  return connected;
}

// What the clients share while a run is in flight.
struct Flight {
  Flight(const LoadOptions& options, TimeSource& clock, const RequestBook& requests,
         std::vector<double> arrivals, bool closed_loop)
      : o(options), time(clock), book(requests), schedule(std::move(arrivals)),
        closed(closed_loop), last_send_s(options.arrivals.duration_s + options.timeout_s) {}

  const LoadOptions& o;
  TimeSource& time;
  const RequestBook& book;
  std::vector<double> schedule;  // an open loop's send times; empty for a closed loop
  bool closed = false;
  // Nothing is sent after this: a request due later would have waited past the timeout anyway.
  double last_send_s = 0;
  Clock::time_point start;
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> sent{0};  // a closed loop's requests, for their lengths
  std::atomic<std::size_t> done{0};
  Stop stop;
  std::mutex merge;
  std::vector<RequestRecord> records;

  // The index of the client's next request, when it is due (-1: now), or nullopt to stop.
  std::optional<std::pair<std::size_t, double>> next_request() {
    if (stop.now) return std::nullopt;
    if (closed) {
      if (to_seconds(time.now() - start) >= o.arrivals.duration_s) return std::nullopt;
      return std::make_pair(sent.fetch_add(1), -1.0);
    }
    const std::size_t i = next.fetch_add(1);
    if (i >= schedule.size()) return std::nullopt;
    const double due = schedule[i];
    std::this_thread::sleep_until(
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(due)));
    if (stop.now || to_seconds(time.now() - start) > last_send_s) return std::nullopt;
    return std::make_pair(i, due);
  }

  void serve_client(std::unique_ptr<httplib::Client> client) {
    std::vector<RequestRecord> mine;
    while (const auto request = next_request()) {
      const auto [i, due] = *request;
      const std::int64_t length = book.length(i);
      RequestRecord rec = send(*client, book.request(i), o, time, start, due);
      rec.length = length;
      if (rec.outcome == RequestOutcome::kConnection) {
        // One retry on a fresh connection tells a closed keep-alive from a server that is gone.
        client = connect(o);
        const auto probe = client->Get("/v2/health/live");
        if (!probe)
          stop.set(fmt::format("the server at {} stopped answering ({})", o.url,
                               httplib::to_string(probe.error())));
      }
      mine.push_back(rec);
      ++done;
    }
    std::lock_guard<std::mutex> lock(merge);
    records.insert(records.end(), mine.begin(), mine.end());
  }

  void show_progress(const LoadProgress& progress) {
    const double duration = o.arrivals.duration_s;
    while (done < (closed ? std::numeric_limits<std::size_t>::max() : schedule.size()) &&
           !stop.now) {
      const double elapsed = to_seconds(time.now() - start);
      if (elapsed >= duration + o.timeout_s) break;
      progress(std::min(1.0, elapsed / duration));
      if (closed && elapsed >= duration) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  // The records, the run's length and why it stopped short, if it did.
  void finish(LoadRun& run) {
    run.records = std::move(records);
    run.duration_s = closed ? to_seconds(time.now() - start) : o.arrivals.duration_s;
    if (!closed && run.records.size() < schedule.size()) {
      run.unsent = schedule.size() - run.records.size();
      run.stopped = stop.reason.empty()
                        ? fmt::format(
                              "{} requests were due after the run's end plus the timeout "
                              "({:.1f} s): the clients were all waiting for answers",
                              run.unsent, last_send_s)
                        : stop.reason;
    } else if (stop.now) {
      run.stopped = stop.reason;
    }
  }
};

}  // namespace

LoadRun run_load(const LoadOptions& options, TimeSource& time, const LoadProgress& progress) {
  validate(options);
  LoadOptions o = options;
  if (!o.url.empty() && o.url.back() == '/') o.url.pop_back();
  LoadRun run;
  run.signature = read_signature(o);
  const bool closed = o.concurrency > 0;
  std::vector<double> schedule = closed ? std::vector<double>{} : schedule_arrivals(o.arrivals);
  const RequestBook book = book_requests(o, run, schedule.size());
  const std::size_t clients =
      closed ? o.concurrency : std::min(o.connections, std::max<std::size_t>(1, schedule.size()));
  std::vector<std::unique_ptr<httplib::Client>> connected = connect_clients(o, clients);
  Flight flight(o, time, book, std::move(schedule), closed);
  std::vector<std::thread> threads;
  flight.start = time.now();
  for (std::size_t c = 0; c < clients; ++c)
    threads.emplace_back([&flight, &connected, c] { flight.serve_client(std::move(connected[c])); });
  if (progress) flight.show_progress(progress);
  for (auto& t : threads) t.join();
  if (progress) progress(1.0);
  flight.finish(run);
  return run;
}

std::string fetch_metrics(const std::string& url) {
  httplib::Client client(url);
  client.set_read_timeout(10, 0);
  const auto res = client.Get("/metrics");
  if (!res || res->status != 200)
    throw RuntimeFailure(
        fmt::format("cannot read {}/metrics: {}", url,
                    res ? "HTTP " + std::to_string(res->status) : httplib::to_string(res.error())));
  return res->body;
}

}  // namespace torchperf

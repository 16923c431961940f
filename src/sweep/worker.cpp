#include "torchperf/sweep/worker.h"

#include <malloc.h>
#include <unistd.h>

#include <cerrno>

#include <memory>
#include <optional>
#include <string>

#include "torchperf/bench/bench_side.h"
#include "torchperf/bench/measurement_json.h"
#include "torchperf/compat/torch_error.h"
#include "torchperf/error.h"
#include "torchperf/measure/clock.h"

namespace torchperf {
namespace {

using nlohmann::json;

json error_response(const std::string& kind, const std::string& message) {
  return {{"ok", false}, {"error", {{"kind", kind}, {"message", message}}}};
}

BenchOptions job_options(const json& request) {
  BenchOptions o = bench_options_from_json(request.at("workload"));
  if (request.contains("references"))
    o.reference_files = request.at("references").get<std::map<std::string, std::string>>();
  return o;
}

json serve(const json& request, const FaultHook& fault) {
  const std::string job = request.at("job").get<std::string>();
  SteadyTimeSource clock;
  if (job == "describe") {
    const WorkloadDescription d = describe(job_options(request));
    return {{"ok", true},
            {"description",
             {{"model", d.model},
              {"inputs", d.inputs},
              {"input_source", d.input_source},
              {"traits", to_json(d.traits)}}}};
  }
  if (job == "reference") {
    save_reference(job_options(request), request.at("batch").get<std::string>(),
                   request.at("path").get<std::string>());
    return {{"ok", true}};
  }
  if (job == "measure") {
    BenchOptions o = job_options(request);
    o.config = Configuration::parse(request.at("configuration").get<std::string>());
    if (fault) fault(o.config.to_string());
    const BenchResult result = run_bench(o, clock);
    return {{"ok", true}, {"result", to_json(result)}};
  }
  throw UsageError("unknown worker job '" + job + "'");
}

}  // namespace

namespace {

// Runs f; an exception becomes an answered error with its kind, so the supervisor can tell a
// user's mistake from a failure.
template <typename F>
json answer(F&& f) {
  try {
    return f();
  } catch (const json::exception& e) {
    return error_response("protocol", std::string("malformed worker request: ") + e.what());
  } catch (const UsageError& e) {
    return error_response("usage", e.what());
  } catch (const ConfigError& e) {
    return error_response("config", e.what());
  } catch (const ModelError& e) {
    return error_response("model", e.what());
  } catch (const WorkloadError& e) {
    return error_response("workload", e.what());
  } catch (const CompileError& e) {
    return error_response("compile", e.what());
  } catch (const ResourceLimit& e) {
    return error_response("out-of-memory", e.what());
  } catch (const std::bad_alloc&) {
    return error_response("out-of-memory", "out of memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    const std::string message = e.what();
    return error_response(compat::is_out_of_memory_message(message) ? "out-of-memory" : "runtime",
                          message);
  }
}

// Request lines from a file descriptor.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  std::optional<std::string> next() {
    while (buffer_.find('\n') == std::string::npos) {
      char buf[4096];
      const ssize_t n = ::read(fd_, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;  // a signal (the supervisor stops and continues
                                              // an idle worker) is not the end of the input
      if (n <= 0) {
        if (buffer_.empty()) return std::nullopt;
        break;
      }
      buffer_.append(buf, static_cast<std::size_t>(n));
    }
    const auto nl = buffer_.find('\n');
    std::string line = buffer_.substr(0, nl);
    buffer_.erase(0, nl == std::string::npos ? buffer_.size() : nl + 1);
    return line;
  }

 private:
  int fd_;
  std::string buffer_;
};

bool write_line(int fd, const json& response) {
  const std::string out = response.dump() + "\n";
  std::size_t written = 0;
  while (written < out.size()) {
    const ssize_t n = ::write(fd, out.data() + written, out.size() - written);
    if (n <= 0) return false;
    written += static_cast<std::size_t>(n);
  }
  return true;
}

// bench's side: a configuration prepared, then timed block by block ({"job": "block",
// "iterations": N} -> {"ns": T}) until {"job": "finish", "samples": ...}, answered with the
// finished measurement.
class BenchSideServer : public SideServer {
 public:
  BenchSideServer(const json& request, const FaultHook& fault) {
    BenchOptions o = job_options(request);
    const Configuration config =
        Configuration::parse(request.at("configuration").get<std::string>());
    if (fault) fault(config.to_string());
    side_ = std::make_unique<BenchSide>(o, config, clock_);
    side_->run().enter();
    entered_ = true;
  }
  ~BenchSideServer() override {
    if (entered_) side_->run().exit();
  }
  json ready() override { return {{"configuration", side_->configuration().to_string()}}; }
  json block(const json& request) override {
    const Nanoseconds t = side_->run().block(request.at("iterations").get<std::size_t>());
    return {{"ns", static_cast<double>(t.count())}};
  }
  json finish(const json& request) override {
    entered_ = false;
    side_->run().exit();
    const SampleSet samples =
        sample_set_from_json(request.at("samples"), SamplingOptions{}.confidence);
    return {{"measurement", to_json(side_->finish(samples, true))}};
  }

 private:
  SteadyTimeSource clock_;
  std::unique_ptr<BenchSide> side_;
  bool entered_ = false;
};

json with_ok(json fields) {
  fields["ok"] = true;
  return fields;
}

// Serves one side: the first answer says it is ready, then one answer per request until finish.
int serve_side(const json& request, const SideFactory& make, LineReader& lines, int out_fd) {
  std::unique_ptr<SideServer> side;
  json response = answer([&]() -> json {
    side = make(request);
    return with_ok(side->ready());
  });
  if (!write_line(out_fd, response) || !response.value("ok", false)) return 1;
  while (true) {
    const auto line = lines.next();
    if (!line) return 0;  // the supervisor is gone: nothing to answer
    bool done = false;
    response = answer([&]() -> json {
      const json r = json::parse(*line);
      const std::string job = r.at("job").get<std::string>();
      if (job == "block") return with_ok(side->block(r));
      if (job == "finish") {
        done = true;
        return with_ok(side->finish(r));
      }
      throw UsageError("unknown side job '" + job + "'");
    });
    if (!write_line(out_fd, response) || !response.value("ok", false)) return 1;
    if (done) return 0;
  }
}

// Brief points of one process state, one after another in this process: each line a measure
// request, answered in turn until the end of the input. An answered error ends the worker: a
// failed measurement may leave the process in a state the next point should not inherit.
int serve_measures(LineReader& lines, int out_fd, const FaultHook& fault) {
  if (!write_line(out_fd, with_ok({}))) return 1;
  while (const auto line = lines.next()) {
    const json response = answer([&]() -> json {
      const json r = json::parse(*line);
      if (r.value("job", "") != "measure")
        throw UsageError("a measures worker serves only measure jobs, not '" + r.value("job", "") +
                         "'");
      return serve(r, fault);
    });
    if (!write_line(out_fd, response) || !response.value("ok", false)) return 1;
    // What this point freed goes back to the kernel before the next one loads: its resident
    // memory then starts near where a fresh worker's would (the cap, the peak), not at this one's.
    ::malloc_trim(0);
  }
  return 0;
}

}  // namespace

void rethrow_worker_error(const json& error, const std::string& what) {
  const std::string kind = error.value("kind", "runtime");
  const std::string message = error.value("message", what + " failed");
  if (kind == "usage") throw UsageError(message);
  if (kind == "config") throw ConfigError(message);
  if (kind == "model") throw ModelError(message);
  if (kind == "workload") throw WorkloadError(message);
  if (kind == "compile") throw CompileError(message);
  throw RuntimeFailure(what + ": " + message);
}

json serve_job(const json& request, const FaultHook& fault) {
  return answer([&] { return serve(request, fault); });
}

int run_worker(int in_fd, int out_fd, const FaultHook& fault,
               const std::map<std::string, SideFactory>& more_sides) {
  LineReader lines(in_fd);
  const std::string line = lines.next().value_or("");
  json request;
  try {
    request = json::parse(line);
  } catch (const json::exception& e) {
    write_line(out_fd,
               error_response("protocol", std::string("malformed worker request: ") + e.what()));
    return 1;
  }
  const std::string job = request.is_object() ? request.value("job", "") : "";
  if (job == "side")
    return serve_side(
        request, [&](const json& r) { return std::make_unique<BenchSideServer>(r, fault); }, lines,
        out_fd);
  if (const auto it = more_sides.find(job); it != more_sides.end())
    return serve_side(request, it->second, lines, out_fd);
  if (job == "measures") return serve_measures(lines, out_fd, fault);
  const json response = serve_job(request, fault);
  if (!write_line(out_fd, response)) return 1;
  return response.value("ok", false) ? 0 : 1;
}

json to_json(const BenchOptions& o) {
  return {{"model", o.model},
          {"input_spec", o.input_spec},
          {"inputs_file", o.inputs_file},
          {"time_s", o.time_s},
          {"target_relative_ci", o.target_relative_ci},
          {"device", o.device},
          {"seed", o.seed},
          {"count_flops", o.count_flops},
          {"stop_when_a_call_exceeds_time", o.stop_when_a_call_exceeds_time},
          {"memory_cap_bytes", o.memory_cap_bytes},
          {"compile_timeout_s", o.compile_timeout_s}};
}

BenchOptions bench_options_from_json(const json& j) {
  BenchOptions o;
  o.model = j.at("model").get<std::string>();
  o.input_spec = j.at("input_spec").get<std::string>();
  o.inputs_file = j.at("inputs_file").get<std::string>();
  o.time_s = j.at("time_s").get<double>();
  o.target_relative_ci = j.at("target_relative_ci").get<double>();
  o.device = j.at("device").get<std::string>();
  o.seed = j.at("seed").get<std::uint64_t>();
  o.count_flops = j.at("count_flops").get<bool>();
  o.stop_when_a_call_exceeds_time = j.value("stop_when_a_call_exceeds_time", false);
  o.memory_cap_bytes = j.value("memory_cap_bytes", std::int64_t{0});
  o.compile_timeout_s = j.value("compile_timeout_s", o.compile_timeout_s);
  return o;
}

json to_json(const WorkloadTraits& t) {
  return {{"torchscript", t.torchscript},
          {"convolutional", t.convolutional},
          {"linear", t.linear},
          {"conv_bias_before_bn", t.conv_bias_before_bn},
          {"hidden_linear_sizes", t.hidden_linear_sizes},
          {"image_input", t.image_input},
          {"floating_input", t.floating_input},
          {"cuda", t.cuda},
          {"cpu_fuser", t.cpu_fuser},
          {"inputs_from_file", t.inputs_from_file},
          {"saved_training", t.saved_training},
          {"can_train_mode", t.can_train_mode},
          {"usable_cores", t.usable_cores},
          {"default_threads", t.default_threads},
          {"default_interop_threads", t.default_interop_threads},
          {"default_batch", t.default_batch},
          {"exported_program", t.exported_program},
          {"dynamic_batch", t.dynamic_batch},
          {"batch_min", t.batch_min},
          {"batch_max", t.batch_max},
          {"exported_shape", t.exported_shape}};
}

WorkloadTraits workload_traits_from_json(const json& j) {
  WorkloadTraits t;
  t.torchscript = j.at("torchscript").get<bool>();
  t.convolutional = j.at("convolutional").get<bool>();
  // Absent from journals written before int8, conv_bias=fold and pad existed.
  t.linear = j.value("linear", false);
  t.conv_bias_before_bn = j.value("conv_bias_before_bn", false);
  t.hidden_linear_sizes = j.value("hidden_linear_sizes", std::vector<long long>{});
  t.image_input = j.at("image_input").get<bool>();
  t.floating_input = j.at("floating_input").get<bool>();
  t.cuda = j.at("cuda").get<bool>();
  t.cpu_fuser = j.at("cpu_fuser").get<bool>();
  t.inputs_from_file = j.at("inputs_from_file").get<bool>();
  t.saved_training = j.at("saved_training").get<bool>();
  t.can_train_mode = j.at("can_train_mode").get<bool>();
  t.usable_cores = j.at("usable_cores").get<int>();
  t.default_threads = j.at("default_threads").get<int>();
  t.default_interop_threads = j.value("default_interop_threads", t.default_threads);
  t.default_batch = j.at("default_batch").get<long long>();
  // Absent from journals written before torch.export programs.
  t.exported_program = j.value("exported_program", false);
  t.dynamic_batch = j.value("dynamic_batch", true);
  t.batch_min = j.value("batch_min", 1LL);
  t.batch_max = j.value("batch_max", 0LL);
  t.exported_shape = j.value("exported_shape", "");
  return t;
}

WorkloadDescription workload_description_from_json(const json& j) {
  WorkloadDescription d;
  d.model = j.at("model").get<std::string>();
  d.inputs = j.at("inputs").get<std::string>();
  d.input_source = j.at("input_source").get<std::string>();
  d.traits = workload_traits_from_json(j.at("traits"));
  return d;
}

}  // namespace torchperf

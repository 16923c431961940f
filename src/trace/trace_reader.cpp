#include "torchperf/trace/trace_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "torchperf/error.h"
#include "torchperf/json_fields.h"
#include "torchperf/trace/json_stream.h"

namespace torchperf {

std::uint32_t StringPool::intern(std::string_view text) {
  if (const auto it = index_.find(text); it != index_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(strings_.size());
  strings_.emplace_back(text);
  index_.emplace(strings_.back(), id);
  return id;
}

bool DeviceInfo::amd() const {
  return name.find("AMD") != std::string::npos || name.find("Radeon") != std::string::npos ||
         name.find("Instinct") != std::string::npos;
}

bool DeviceInfo::has_matrix_units() const {
  return amd() ? compute_major >= 9 : compute_major >= 7;
}

bool parse_microseconds(std::string_view text, std::int64_t& nanoseconds) {
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' || text.back() == '\t'))
    text.remove_suffix(1);
  if (text.empty()) return false;
  std::size_t i = 0;
  const bool negative = text[0] == '-';
  if (negative) ++i;
  const std::size_t digits_from = i;
  std::int64_t whole = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (i - digits_from >= 16) return false;  // ns would not fit in 63 bits
    whole = whole * 10 + (text[i] - '0');
  }
  if (i == digits_from || whole > 9'000'000'000'000'000) return false;
  std::int64_t fraction = 0;
  int fraction_digits = 0;
  bool round_up = false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    const std::size_t from = i;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      if (fraction_digits < 3) {
        fraction = fraction * 10 + (text[i] - '0');
        ++fraction_digits;
      } else if (i == from + 3) {
        round_up = text[i] >= '5';
      }
    }
    if (i == from) return false;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    // Exponent notation (rare): through a double, which is exact enough for durations.
    char* end = nullptr;
    const std::string copy(text);
    const double us = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || !std::isfinite(us) || std::fabs(us) > 9e15)
      return false;
    nanoseconds = static_cast<std::int64_t>(std::llround(us * 1000.0));
    return true;
  }
  if (i != text.size()) return false;
  for (; fraction_digits < 3; ++fraction_digits) fraction *= 10;
  std::int64_t ns = whole * 1000 + fraction + (round_up ? 1 : 0);
  nanoseconds = negative ? -ns : ns;
  return true;
}

namespace {

namespace fs = std::filesystem;
namespace od = simdjson::ondemand;

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}
bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

CopyKind copy_kind(std::string_view name, std::string_view kind_arg) {
  if (contains(name, "HtoD") || kind_arg == "HtoD" || kind_arg == "1") {
    if (contains(name, "Pageable")) return CopyKind::kHostToDevicePageable;
    if (contains(name, "Pinned")) return CopyKind::kHostToDevicePinned;
    return CopyKind::kHostToDevice;
  }
  if (contains(name, "DtoH") || kind_arg == "DtoH" || kind_arg == "2")
    return CopyKind::kDeviceToHost;
  if (contains(name, "DtoD") || kind_arg == "DtoD" || kind_arg == "3")
    return CopyKind::kDeviceToDevice;
  return CopyKind::kOther;
}

bool communication_kernel(std::string_view name) {
  return contains(name, "nccl") || contains(name, "rccl") || contains(name, "NCCL");
}

// What one "X" event's category makes it.
enum class Role { kIgnore, kHost, kStep, kDevice };

struct Classified {
  Role role = Role::kIgnore;
  HostKind host = HostKind::kOperator;
  DeviceKind device = DeviceKind::kKernel;
};

// What an event's name says, worked out once per distinct name (names repeat by the million).
struct NameTraits {
  bool profiler_step = false, data_loader = false, gloo = false, communication = false;
  bool data_wait_phase = false, copy_phase = false;
};

NameTraits name_traits(std::string_view name) {
  NameTraits t;
  t.profiler_step = starts_with(name, "ProfilerStep#");
  t.data_loader = contains(name, "DataLoader");
  t.gloo = starts_with(name, "gloo:");
  t.communication = communication_kernel(name);
  t.data_wait_phase = name == "data wait";
  t.copy_phase = name == "copy";
  return t;
}

Classified classify(std::string_view category, const NameTraits& name, bool has_category) {
  Classified c;
  if (!has_category || category == "cpu_op" || category == "Operator" || category == "operator") {
    c.role = name.profiler_step ? Role::kStep : Role::kHost;
    c.host = name.data_loader ? HostKind::kDataLoader : HostKind::kOperator;
    return c;
  }
  if (category == "user_annotation") {
    c.role = name.profiler_step ? Role::kStep : Role::kHost;
    c.host = name.data_loader ? HostKind::kDataLoader
             : name.gloo      ? HostKind::kCommunication
                              : HostKind::kAnnotation;
    return c;
  }
  if (category == "cuda_runtime" || category == "cuda_driver" || category == "Runtime" ||
      category == "runtime") {
    c.role = Role::kHost;
    c.host = HostKind::kRuntime;
    return c;
  }
  if (category == "kernel" || category == "Kernel") {
    c.role = Role::kDevice;
    c.device = DeviceKind::kKernel;
  } else if (category == "gpu_memcpy" || category == "Memcpy") {
    c.role = Role::kDevice;
    c.device = DeviceKind::kMemcpy;
  } else if (category == "gpu_memset" || category == "Memset") {
    c.role = Role::kDevice;
    c.device = DeviceKind::kMemset;
  } else if (category == "cuda_sync") {
    c.role = Role::kDevice;
    c.device = DeviceKind::kSync;
  } else if (category == "step") {  // torchperf train --trace
    c.role = Role::kStep;
  } else if (category == "phase") {
    c.role = Role::kHost;
    c.host = name.data_wait_phase ? HostKind::kDataLoader
             : name.copy_phase    ? HostKind::kCopy
                                  : HostKind::kAnnotation;
  }
  return c;
}

// A step whose name carries no number: numbered by its place once the trace is whole (a batch
// does not know its place among the steps).
constexpr std::int64_t kUnnumberedStep = INT64_MIN;

// The step number in "ProfilerStep#12" or torchperf train's "step 12".
std::int64_t step_number(std::string_view name, std::int64_t fallback) {
  const auto at = name.find_last_of("# ");
  if (at == std::string_view::npos) return fallback;
  std::int64_t n = 0;
  std::size_t i = at + 1;
  if (i >= name.size()) return fallback;
  if (name.size() - i > 15) return fallback;  // not a step count
  for (; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return fallback;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

class TraceBuilder : public TraceVisitor {
 public:
  // event_base: events of the file before the first one this builder sees (a batch's place).
  TraceBuilder(Trace& trace, const TraceReadOptions& options, std::uint64_t event_base = 0)
      : trace_(trace), options_(options), event_base_(event_base) {
    if (trace_.strings.size() == 0) trace_.strings.intern("");
  }

  void on_member(std::string_view key, std::string_view json) override {
    if (key == "traceEvents") {
      // "traceEvents" that is not an array: the splitter hands it over as a member.
      throw TraceError(trace_.path + ": \"traceEvents\" is not an array of events");
    }
    if (key != "deviceProperties" && key != "distributedInfo") return;
    const auto value = nlohmann::json::parse(json, nullptr, false);
    if (value.is_discarded()) {
      if (options_.strict)
        throw TraceError(trace_.path + ": \"" + std::string(key) + "\" is not valid JSON");
      return;
    }
    // Fields of the wrong type are left at their defaults: these are descriptions, not data.
    if (key == "distributedInfo") {
      trace_.rank = integer_field(value, "rank", -1);
      trace_.world_size = integer_field(value, "world_size", 0);
      trace_.backend = string_field(value, "backend");
    }
    if (key == "deviceProperties" && value.is_array()) {
      for (const auto& d : value) {
        if (!d.is_object()) continue;
        DeviceInfo info;
        info.id = integer_field(d, "id");
        info.name = string_field(d, "name");
        info.compute_major = integer_field(d, "computeMajor");
        info.compute_minor = integer_field(d, "computeMinor");
        if (d.contains("totalGlobalMem") && d["totalGlobalMem"].is_number_unsigned())
          info.memory_bytes = d["totalGlobalMem"].get<std::uint64_t>();
        trace_.devices.push_back(info);
      }
    }
  }

  void on_event(std::string_view json, std::uint64_t offset) override {
    ++trace_.events;
    static_assert(kJsonPadding >= simdjson::SIMDJSON_PADDING);
    simdjson::padded_string_view view(json.data(), json.size(), json.size() + kJsonPadding);
    od::document doc;
    if (parser_.iterate(view).get(doc) != simdjson::SUCCESS)
      return skip(trace_.skips.malformed, offset, "not valid JSON");
    od::object object;
    if (doc.get_object().get(object) != simdjson::SUCCESS)
      return skip(trace_.skips.wrong_type, offset, "not a JSON object");
    const simdjson::error_code error = read_fields(object);
    if (error == simdjson::INCORRECT_TYPE)
      return skip(trace_.skips.wrong_type, offset, "a field of the wrong type (" + problem_ + ")");
    if (error != simdjson::SUCCESS)
      return skip(trace_.skips.malformed, offset,
                  std::string("not valid JSON (") + simdjson::error_message(error) + ")");
    add_event(offset);
  }

 private:
  // The current event's fields, as read.
  struct Fields {
    std::string_view ph, cat, name, pid, tid, shapes, copy_kind;
    std::int64_t ts = 0, dur = 0, correlation = -1;
    std::int64_t device = -1, stream = -1;
    std::uint64_t bytes = 0;
    bool has_ph = false, has_cat = false, has_name = false, has_ts = false, has_dur = false;
  };

  simdjson::error_code read_fields(od::object& object) {
    f_ = Fields{};
    shapes_id_ = 0;  // what an earlier, skipped event's args left must not reach this one
    copy_kind_.clear();
    for (auto field_result : object) {
      od::field field;
      if (auto e = std::move(field_result).get(field); e) return e;
      std::string_view key;
      if (auto e = field.unescaped_key().get(key); e) return e;
      od::value value = field.value();
      simdjson::error_code e = simdjson::SUCCESS;
      // The keys of an event are few and short: told apart by length and first letter before
      // being compared.
      const char k0 = key.empty() ? '\0' : key[0];
      const std::size_t n = key.size();
      if (n > 4 || n < 2 ||
          (k0 != 'p' && k0 != 'c' && k0 != 'n' && k0 != 't' && k0 != 'd' && k0 != 'a')) {
        continue;
      }
      if (key == "ph") {
        e = read_string(value, f_.ph, "ph");
        f_.has_ph = true;
      } else if (key == "cat") {
        e = read_string(value, f_.cat, "cat");
        f_.has_cat = true;
      } else if (key == "name") {
        e = read_name(value);
        f_.has_name = true;
      } else if (key == "ts") {
        e = read_time(value, f_.ts, "ts");
        f_.has_ts = true;
      } else if (key == "dur") {
        e = read_time(value, f_.dur, "dur");
        f_.has_dur = true;
      } else if (key == "pid") {
        f_.pid = trim(value.raw_json_token());
      } else if (key == "tid") {
        f_.tid = trim(value.raw_json_token());
      } else if (key == "args") {
        e = read_args(value);
      }
      if (e) return e;
    }
    return simdjson::SUCCESS;
  }

  simdjson::error_code read_string(od::value& value, std::string_view& out, const char* what) {
    const auto e = value.get_string().get(out);
    if (e == simdjson::INCORRECT_TYPE) problem_ = std::string("\"") + what + "\" is not a string";
    return e;
  }

  // Names are interned at once: the parser's string buffer is reused by the next string.
  simdjson::error_code read_name(od::value& value) {
    std::string_view name;
    const auto e = read_string(value, name, "name");
    if (e) return e;
    name_id_ = trace_.strings.intern(name);
    f_.name = trace_.strings.at(name_id_);
    return simdjson::SUCCESS;
  }

  simdjson::error_code read_time(od::value& value, std::int64_t& out, const char* what) {
    od::json_type type;
    if (auto e = value.type().get(type); e) return e;
    if (type != od::json_type::number) {
      problem_ = std::string("\"") + what + "\" is not a number";
      return simdjson::INCORRECT_TYPE;
    }
    if (!parse_microseconds(value.raw_json_token(), out)) {
      problem_ = std::string("\"") + what + "\" is not a time in microseconds";
      return simdjson::INCORRECT_TYPE;
    }
    return simdjson::SUCCESS;
  }

  static simdjson::error_code read_integer(od::value& value, std::int64_t& out) {
    od::json_type type;
    if (auto e = value.type().get(type); e) return e;
    if (type == od::json_type::number) {
      std::int64_t v = 0;
      if (value.get_int64().get(v) == simdjson::SUCCESS) out = v;
      return simdjson::SUCCESS;
    }
    return simdjson::SUCCESS;  // anything else: left as unknown
  }

  // A stream id: an integer, or HIP's "0x…" (a stream's address): 0 and small values stay as
  // they are, an address is folded into 31 bits so that it fits DeviceEvent::stream and stays
  // apart from the unknown -1.
  static simdjson::error_code read_stream(od::value& value, std::int64_t& out) {
    od::json_type type;
    if (auto e = value.type().get(type); e) return e;
    if (type != od::json_type::string) return read_integer(value, out);
    std::string_view text;
    if (value.get_string().get(text) != simdjson::SUCCESS) return simdjson::SUCCESS;
    if (text.size() < 3 || text.size() > 18 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X'))
      return simdjson::SUCCESS;  // not an id: left as unknown
    std::uint64_t v = 0;
    for (const char c : text.substr(2)) {
      const int digit = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                               : -1;
      if (digit < 0) return simdjson::SUCCESS;
      v = v * 16 + static_cast<std::uint64_t>(digit);
    }
    // Fibonacci hashing: the top 31 bits of v times 2^64/phi, so addresses spread apart.
    out = static_cast<std::int64_t>(v <= 0x7fffffffu ? v : (v * 0x9E3779B97F4A7C15ull) >> 33);
    return simdjson::SUCCESS;
  }

  simdjson::error_code read_args(od::value& value) {
    od::json_type type;
    if (auto e = value.type().get(type); e) return e;
    if (type != od::json_type::object) return simdjson::SUCCESS;
    od::object args;
    if (auto e = value.get_object().get(args); e) return e;
    for (auto field_result : args) {
      od::field field;
      if (auto e = std::move(field_result).get(field); e) return e;
      std::string_view key;
      if (auto e = field.unescaped_key().get(key); e) return e;
      od::value v = field.value();
      simdjson::error_code e = simdjson::SUCCESS;
      if (key == "correlation") {
        e = read_integer(v, f_.correlation);
      } else if (key == "device") {
        e = read_integer(v, f_.device);
      } else if (key == "stream") {
        e = read_stream(v, f_.stream);
      } else if (key == "bytes") {
        std::int64_t b = 0;
        e = read_integer(v, b);
        if (b > 0) f_.bytes = static_cast<std::uint64_t>(b);
      } else if (key == "Input Dims") {
        od::array dims;
        if (v.get_array().get(dims) == simdjson::SUCCESS &&
            dims.raw_json().get(f_.shapes) == simdjson::SUCCESS)
          shapes_id_ = trace_.strings.intern(trim(f_.shapes));
      } else if (key == "kind") {
        std::string_view kind;
        if (v.get_string().get(kind) == simdjson::SUCCESS) copy_kind_ = std::string(kind);
      }
      if (e) return e;
    }
    return simdjson::SUCCESS;
  }

  void skip(std::uint64_t& counter, std::uint64_t offset, const std::string& what) {
    const std::string problem = "event " + std::to_string(event_base_ + trace_.events) +
                                " at byte " + std::to_string(offset) + ": " + what;
    if (options_.strict) throw TraceError(trace_.path + ": " + problem + " (--strict)");
    ++counter;
    if (trace_.skips.first_problem.empty()) trace_.skips.first_problem = problem;
  }

  void add_event(std::uint64_t offset) {
    const std::uint32_t shapes = shapes_id_;
    const std::string copy_arg = std::move(copy_kind_);
    shapes_id_ = 0;
    copy_kind_.clear();
    if (!f_.has_ph) return skip(trace_.skips.missing_field, offset, "no \"ph\"");
    if (f_.ph != "X") {
      ++trace_.ignored;
      return;
    }
    const char* missing = !f_.has_name ? "name" : !f_.has_ts ? "ts" : !f_.has_dur ? "dur" : nullptr;
    if (missing != nullptr)
      return skip(trace_.skips.missing_field, offset,
                  std::string("a complete event (\"ph\": \"X\") without \"") + missing + "\"");
    if (f_.dur < 0) return skip(trace_.skips.wrong_type, offset, "a negative \"dur\"");
    // Within 73 years of the epoch, so that every end, difference and sum fits in 64 bits.
    constexpr std::int64_t kLimit = std::int64_t{1} << 61;
    if (f_.ts < -kLimit || f_.ts > kLimit || f_.dur > kLimit)
      return skip(trace_.skips.wrong_type, offset, "a \"ts\" or \"dur\" beyond 73 years");
    if (name_id_ >= traits_.size()) traits_.resize(trace_.strings.size());
    if (!traits_[name_id_]) traits_[name_id_] = name_traits(f_.name);
    const NameTraits& traits = *traits_[name_id_];
    const Classified c = classify(f_.cat, traits, f_.has_cat);
    switch (c.role) {
      case Role::kIgnore:
        ++trace_.ignored;
        return;
      case Role::kStep:
        trace_.steps.push_back({step_number(f_.name, kUnnumberedStep), f_.ts, f_.ts + f_.dur});
        return;
      case Role::kHost: {
        HostEvent e;
        e.start = f_.ts;
        e.duration = f_.dur;
        e.name = name_id_;
        e.kind = c.host;
        e.thread = thread_index();
        e.shapes = shapes;
        if (c.host == HostKind::kRuntime) e.correlation = f_.correlation;
        trace_.host.push_back(e);
        return;
      }
      case Role::kDevice: {
        DeviceEvent e;
        e.start = f_.ts;
        e.duration = f_.dur;
        e.name = name_id_;
        e.kind = c.device;
        e.correlation = f_.correlation;
        e.bytes = f_.bytes;
        e.device = static_cast<std::int32_t>(f_.device);
        e.stream = static_cast<std::int32_t>(f_.stream);
        if (c.device == DeviceKind::kMemcpy) e.copy = copy_kind(f_.name, copy_arg);
        if (c.device == DeviceKind::kKernel) e.communication = traits.communication;
        trace_.device.push_back(e);
        return;
      }
    }
  }

  std::uint32_t thread_index() {
    key_.assign(f_.pid);
    key_ += '/';
    key_.append(f_.tid);
    if (const auto it = threads_.find(key_); it != threads_.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(trace_.threads.size());
    trace_.threads.push_back(key_);
    threads_.emplace(key_, id);
    return id;
  }

  Trace& trace_;
  const TraceReadOptions& options_;
  std::uint64_t event_base_ = 0;
  od::parser parser_;
  Fields f_;
  std::uint32_t name_id_ = 0, shapes_id_ = 0;
  std::string copy_kind_;
  std::string problem_;
  std::string key_;
  std::unordered_map<std::string, std::uint32_t> threads_;
  std::vector<std::optional<NameTraits>> traits_;  // by name id
};

// Steps in time order, and the span of what the analyses read.
void finish_trace(Trace& trace) {
  std::sort(trace.steps.begin(), trace.steps.end(),
            [](const Step& a, const Step& b) { return a.start < b.start; });
  for (std::size_t i = 0; i < trace.steps.size(); ++i)
    if (trace.steps[i].number == kUnnumberedStep)
      trace.steps[i].number = static_cast<std::int64_t>(i);
  std::int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& e : trace.host) {
    first = std::min(first, e.start);
    last = std::max(last, e.end());
  }
  for (const auto& e : trace.device) {
    first = std::min(first, e.start);
    last = std::max(last, e.end());
  }
  for (const auto& s : trace.steps) {
    first = std::min(first, s.start);
    last = std::max(last, s.end);
  }
  trace.first_ns = first == INT64_MAX ? 0 : first;
  trace.last_ns = last == INT64_MIN ? 0 : last;
}

// Events copied out of the splitter's buffer, to be parsed on another thread.
struct EventBatch {
  std::size_t number = 0;
  std::uint64_t first_event = 0;  // events of the file before this batch
  std::string bytes;              // the events back to back, kJsonPadding spaces after the last
  std::vector<std::uint32_t> starts, sizes;
  std::vector<std::uint64_t> offsets;  // in the file
};

struct BatchResult {
  Trace partial;
  std::exception_ptr error;
};

// Appends a batch's partial trace to the whole, its names and threads renumbered. Batches are
// merged in file order, so the result is the one a single thread would build.
class TraceMerger {
 public:
  explicit TraceMerger(Trace& trace) : trace_(trace) {
    for (std::uint32_t i = 0; i < trace_.threads.size(); ++i)
      threads_.emplace(trace_.threads[i], i);
  }
  void merge(Trace& part) {
    names_.resize(part.strings.size());
    for (std::uint32_t i = 0; i < part.strings.size(); ++i)
      names_[i] = trace_.strings.intern(part.strings.at(i));
    threads_of_part_.resize(part.threads.size());
    for (std::uint32_t i = 0; i < part.threads.size(); ++i) {
      const auto [it, added] = threads_.emplace(part.threads[i], trace_.threads.size());
      if (added) trace_.threads.push_back(part.threads[i]);
      threads_of_part_[i] = it->second;
    }
    for (HostEvent e : part.host) {
      e.name = names_[e.name];
      e.shapes = names_[e.shapes];
      e.thread = threads_of_part_[e.thread];
      trace_.host.push_back(e);
    }
    for (DeviceEvent e : part.device) {
      e.name = names_[e.name];
      trace_.device.push_back(e);
    }
    trace_.steps.insert(trace_.steps.end(), part.steps.begin(), part.steps.end());
    trace_.events += part.events;
    trace_.ignored += part.ignored;
    trace_.skips.missing_field += part.skips.missing_field;
    trace_.skips.wrong_type += part.skips.wrong_type;
    trace_.skips.malformed += part.skips.malformed;
    if (trace_.skips.first_problem.empty()) trace_.skips.first_problem = part.skips.first_problem;
  }

 private:
  Trace& trace_;
  std::unordered_map<std::string, std::uint32_t> threads_;
  std::vector<std::uint32_t> names_, threads_of_part_;
};

// The splitter's visitor when events are parsed on worker threads: it copies events into
// batches, hands them to the workers, and merges their results in order as they come back
// (so that at most a few batches' records are held twice).
class ParallelTraceBuilder : public TraceVisitor {
 public:
  ParallelTraceBuilder(Trace& trace, const TraceReadOptions& options, std::size_t threads)
      : trace_(trace), options_(options), metadata_(trace, options), merger_(trace) {
    batch_bytes_ = options.batch_bytes;
    try {
      for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
    } catch (...) {  // a thread that cannot start: join the ones that did
      stop();
      throw;
    }
  }
  ~ParallelTraceBuilder() override { stop(); }

  void on_member(std::string_view key, std::string_view json) override {
    metadata_.on_member(key, json);
  }

  void on_event(std::string_view json, std::uint64_t offset) override {
    current_.starts.push_back(static_cast<std::uint32_t>(current_.bytes.size()));
    current_.sizes.push_back(static_cast<std::uint32_t>(json.size()));
    current_.offsets.push_back(offset);
    current_.bytes.append(json);
    ++events_;
    if (current_.bytes.size() >= batch_bytes_) hand_over();
  }

  // After the splitter: the last batch, then every result merged in order.
  void finish() {
    hand_over();
    std::unique_lock<std::mutex> lock(mutex_);
    closed_ = true;
    work_ready_.notify_all();
    while (merged_ < next_number_) merge_ready(lock, true);
  }

 private:
  void hand_over() {
    if (current_.starts.empty()) return;
    current_.bytes.append(kJsonPadding, ' ');
    current_.number = next_number_++;
    EventBatch batch = std::move(current_);
    current_ = EventBatch{};
    current_.first_event = events_;
    current_.bytes.reserve(batch_bytes_ + (64u << 10));
    std::unique_lock<std::mutex> lock(mutex_);
    // A bounded queue: the splitter waits rather than copy the whole file ahead of the workers.
    while (queue_.size() >= 2 * workers_.size()) {
      merge_ready(lock, false);
      if (queue_.size() >= 2 * workers_.size()) work_done_.wait(lock);
    }
    queue_.push_back(std::move(batch));
    work_ready_.notify_one();
    merge_ready(lock, false);
  }

  // Merges the results that are next in order; with `wait`, waits for the next one first.
  void merge_ready(std::unique_lock<std::mutex>& lock, bool wait) {
    if (wait) work_done_.wait(lock, [&] { return results_.count(merged_) > 0; });
    for (auto it = results_.find(merged_); it != results_.end(); it = results_.find(merged_)) {
      BatchResult result = std::move(it->second);
      results_.erase(it);
      ++merged_;
      lock.unlock();
      if (result.error) {
        lock.lock();
        merge_failed_ = true;
        std::rethrow_exception(result.error);
      }
      merger_.merge(result.partial);
      lock.lock();
    }
  }

  void work() {
    for (;;) {
      EventBatch batch;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        work_ready_.wait(lock, [&] { return !queue_.empty() || closed_ || stopping_; });
        if (stopping_ || queue_.empty()) return;
        batch = std::move(queue_.front());
        queue_.pop_front();
        work_done_.notify_all();
      }
      BatchResult result;
      result.partial.path = trace_.path;
      try {
        TraceBuilder builder(result.partial, options_, batch.first_event);
        for (std::size_t i = 0; i < batch.starts.size(); ++i)
          builder.on_event(std::string_view(batch.bytes.data() + batch.starts[i], batch.sizes[i]),
                           batch.offsets[i]);
      } catch (...) {
        result.error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      results_.emplace(batch.number, std::move(result));
      work_done_.notify_all();
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  Trace& trace_;
  const TraceReadOptions& options_;
  TraceBuilder metadata_;  // deviceProperties, distributedInfo: on this thread
  TraceMerger merger_;
  std::size_t batch_bytes_ = 4u << 20;
  EventBatch current_;
  std::uint64_t events_ = 0;
  std::size_t next_number_ = 0, merged_ = 0;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_, work_done_;
  std::deque<EventBatch> queue_;
  std::map<std::size_t, BatchResult> results_;
  bool closed_ = false, stopping_ = false;
  bool merge_failed_ = false;

 public:
  // Whether an error came from a batch (an event) rather than from the splitter (the text).
  bool merge_failed() const { return merge_failed_; }
};

// Threads that parse events: one below kParallelBytes (small files, tests, the fuzzer), else
// every core (up to 4): the splitter and the reader thread keep one busy between them.
constexpr std::uint64_t kParallelBytes = 16u << 20;

std::size_t parse_threads(const ByteSource& source, const TraceReadOptions& options) {
  if (options.threads > 0) return options.threads;
  const std::uint64_t json = source.compressed() ? source.total() * 10 : source.total();
  if (json < kParallelBytes) return 1;
  return std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 4);
}

Trace read_from(ByteSource& source, const TraceReadOptions& options) {
  Trace trace;
  trace.path = source.name();
  trace.file_bytes = source.total();
  trace.compressed = source.compressed();
  SplitProgress progress;
  progress.report = options.progress;
  SplitResult split;
  const std::size_t threads = parse_threads(source, options);
  if (threads <= 1) {
    TraceBuilder builder(trace, options);
    split = split_trace_json(source, builder, progress);
  } else {
    ParallelTraceBuilder builder(trace, options, threads);
    try {
      split = split_trace_json(source, builder, progress);
    } catch (...) {
      // The text is bad further on (or an event is, with --strict). An event before that point
      // that --strict refuses is the error one thread would report first: finish the batches.
      const std::exception_ptr error = std::current_exception();
      if (!builder.merge_failed()) builder.finish();
      std::rethrow_exception(error);
    }
    builder.finish();
  }
  trace.json_bytes = split.bytes;
  if (split.object_form && !split.has_trace_events)
    throw TraceError(trace.path +
                     ": no trace events: the JSON object has no \"traceEvents\" "
                     "array; is this a profiler trace?");
  if (trace.events == 0)
    throw TraceError(trace.path + ": no trace events: " +
                     (split.object_form ? "\"traceEvents\" is empty" : "the array is empty"));
  trace.form = split.object_form ? "kineto" : "array";
  finish_trace(trace);
  if (trace.host.empty() && trace.device.empty() && trace.steps.empty())
    throw TraceError(trace.path + ": none of its " + std::to_string(trace.events) +
                     " events is a complete event (\"ph\": \"X\" with name, ts and dur) that "
                     "the analyses read" +
                     (trace.skips.first_problem.empty()
                          ? std::string()
                          : "; the first problem: " + trace.skips.first_problem));
  return trace;
}

}  // namespace

Trace read_trace(const std::string& path, const TraceReadOptions& options) {
  std::error_code ec;
  if (path != "-" && !fs::exists(path, ec)) throw TraceError(path + ": no such file or folder");
  auto source = open_byte_source(path);
  return read_from(*source, options);
}

Trace read_trace_text(std::string_view text, const std::string& name,
                      const TraceReadOptions& options) {
  auto source = memory_byte_source(text, name);
  return read_from(*source, options);
}

std::vector<std::string> trace_files(const std::string& path) {
  std::error_code ec;
  if (path == "-") return {path};  // standard input
  if (!fs::exists(path, ec)) throw TraceError(path + ": no such file or folder");
  if (!fs::is_directory(path, ec)) return {path};
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    const std::string name = entry.path().filename().string();
    const auto ends = [&](const std::string& suffix) {
      return name.size() >= suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends(".json") || ends(".json.gz")) files.push_back(entry.path().string());
  }
  if (ec) throw TraceError(path + ": cannot list the folder: " + ec.message());
  if (files.empty())
    throw TraceError(path + ": the folder has no trace files (*.json or *.json.gz)");
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace torchperf

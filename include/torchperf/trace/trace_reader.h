// Reading PyTorch profiler traces: Kineto's object form, the older array form (PyTorch without
// Kineto, Debian's 1.13), and `torchperf train --trace`'s files; plain or gzip; one file or a
// folder of ranks. Streaming (json_stream.h) with each event parsed by simdjson in place.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "torchperf/trace/trace.h"

namespace torchperf {

struct TraceReadOptions {
  // An event with a missing or mistyped field is an error (TraceError) rather than skipped and
  // counted.
  bool strict = false;
  // Called as the file is read: bytes of the file consumed, and its size.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
  // Threads that parse events (0: one for files under 16 MB of JSON, else up to 4, one a core);
  // events go to them in batches of batch_bytes. The result does not depend on either.
  std::size_t threads = 0;
  std::size_t batch_bytes = 4u << 20;
};

// TraceError for a missing file, text that is not JSON or ends early (with the byte offset), a
// corrupt gzip, JSON without trace events, or no complete event to analyse.
Trace read_trace(const std::string& path, const TraceReadOptions& options = {});
Trace read_trace_text(std::string_view text, const std::string& name,
                      const TraceReadOptions& options = {});

// The trace files of a folder (*.json, *.json.gz, sorted by name); TraceError when there are
// none. A path that is a file is returned as it is.
std::vector<std::string> trace_files(const std::string& path);

// Parses a JSON number of microseconds, as written, into integer nanoseconds without going
// through a double (a 2024 timestamp in µs with a ns fraction needs 61 bits). False if the text
// is not a number.
bool parse_microseconds(std::string_view text, std::int64_t& nanoseconds);

}  // namespace torchperf

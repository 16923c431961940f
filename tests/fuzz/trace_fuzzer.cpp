// libFuzzer target for `trace`'s reader and analyses (scripts/fuzz_trace.sh builds and runs it with
// clang): any bytes are either a trace, analysed end to end, or a TraceError; nothing else may
// escape, crash or trip the sanitizers. Input that starts with gzip's magic goes through a file,
// so that the gzip path is fuzzed too. The corpus it grows is kept in tests/fuzz/corpus/trace and
// replayed by tests/trace/trace_reader_test.cpp in every build.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "torchperf/error.h"
#include "torchperf/trace/trace_analysis.h"
#include "torchperf/trace/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torchperf;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  TraceReadOptions options;
  options.strict = size > 0 && (data[size - 1] & 1) != 0;
  try {
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
      static const std::string path =
          "/tmp/torchperf-fuzz-" + std::to_string(::getpid()) + ".json.gz";
      std::FILE* f = std::fopen(path.c_str(), "wb");
      if (f == nullptr) return 0;
      std::fwrite(data, 1, size, f);
      std::fclose(f);
      analyze_trace(read_trace(path, options), true);
    } else {
      analyze_trace(read_trace_text(text, "fuzz.json", options), true);
    }
  } catch (const TraceError&) {
  }
  return 0;
}

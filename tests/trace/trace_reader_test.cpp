#include "torchperf/trace/trace_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "support/trace_text.h"
#include "test_paths.h"
#include "torchperf/error.h"
#include "torchperf/trace/trace_analysis.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;
using testing::TraceText;

std::string real_trace(const std::string& name) {
  return std::string(TORCHPERF_TEST_SOURCE_DIR) + "/tests/data/traces/" + name;
}

std::string error_of(const std::string& text, bool strict = false) {
  try {
    TraceReadOptions o;
    o.strict = strict;
    read_trace_text(text, "t.json", o);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

TEST(ParseMicroseconds, KeepsNanosecondsOfTodaysTimestampsExactly) {
  std::int64_t ns = 0;
  ASSERT_TRUE(parse_microseconds("1712195495519695.826", ns));
  EXPECT_EQ(ns, 1712195495519695826);  // a double would round this to 250 ns
  ASSERT_TRUE(parse_microseconds("1661203462598738", ns));
  EXPECT_EQ(ns, 1661203462598738000);
  ASSERT_TRUE(parse_microseconds("12.5", ns));
  EXPECT_EQ(ns, 12500);
  ASSERT_TRUE(parse_microseconds("0.0004", ns));
  EXPECT_EQ(ns, 0);
  ASSERT_TRUE(parse_microseconds("0.0006", ns));
  EXPECT_EQ(ns, 1);
  ASSERT_TRUE(parse_microseconds("-3", ns));
  EXPECT_EQ(ns, -3000);
  ASSERT_TRUE(parse_microseconds("1.5e3 ", ns));
  EXPECT_EQ(ns, 1500000);
}

TEST(ParseMicroseconds, RefusesWhatIsNotATimeThatFitsInNanoseconds) {
  std::int64_t ns = 0;
  for (const char* bad :
       {"", "-", "1.", ".5", "1x", "12345678901234567", "9999999999999999", "1e300", "\"12\""})
    EXPECT_FALSE(parse_microseconds(bad, ns)) << bad;
}

TEST(TraceReader, ReadsKinetoEventsIntoHostDeviceAndSteps) {
  TraceText t;
  t.device()
      .rank(2, 4)
      .step(7, 0, 100)
      .op("aten::mm", 1, 50)
      .runtime("cudaLaunchKernel", 2, 3, 11)
      .kernel("sgemm", 10, 20, 11)
      .memcpy("Memcpy HtoD (Pageable -> Device)", 40, 5, 12, 4096)
      .flow(11, 2)
      .annotation("## forward ##", 0, 60)
      .op("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 90, 5);
  const Trace trace = read_trace_text(t.json(), "t.json");
  EXPECT_EQ(trace.form, "kineto");
  EXPECT_EQ(trace.rank, 2);
  EXPECT_EQ(trace.world_size, 4);
  EXPECT_EQ(trace.backend, "nccl");
  ASSERT_EQ(trace.devices.size(), 1u);
  EXPECT_TRUE(trace.devices[0].has_matrix_units());
  EXPECT_EQ(trace.events, 8u);
  EXPECT_EQ(trace.ignored, 1u);  // the flow
  ASSERT_EQ(trace.steps.size(), 1u);
  EXPECT_EQ(trace.steps[0].number, 7);
  EXPECT_EQ(trace.steps[0].end, 100000);
  ASSERT_EQ(trace.host.size(), 4u);
  EXPECT_EQ(trace.host[1].kind, HostKind::kRuntime);
  EXPECT_EQ(trace.host[1].correlation, 11);
  EXPECT_EQ(trace.host[2].kind, HostKind::kAnnotation);
  EXPECT_EQ(trace.host[3].kind, HostKind::kDataLoader);
  ASSERT_EQ(trace.device.size(), 2u);
  EXPECT_EQ(trace.device[0].start, 10000);
  EXPECT_EQ(trace.device[0].duration, 20000);
  EXPECT_EQ(trace.device[1].kind, DeviceKind::kMemcpy);
  EXPECT_EQ(trace.device[1].copy, CopyKind::kHostToDevicePageable);
  EXPECT_EQ(trace.device[1].bytes, 4096u);
  EXPECT_EQ(trace.first_ns, 0);
  EXPECT_EQ(trace.last_ns, 100000);
}

TEST(TraceReader, ReadsTheArrayFormThatPyTorchWithoutKinetoWrites) {
  // As Debian's PyTorch 1.13 export_chrome_trace writes it (no "cat", pid "CPU functions").
  const std::string text =
      R"([{"name": "ProfilerStep#0", "ph": "X", "ts": 426, "dur": 7972, "tid": 1, "pid": "CPU functions", "args": {}}, )"
      R"({"name": "aten::linear", "ph": "X", "ts": 546, "dur": 785, "tid": 1, "pid": "CPU functions", "args": {}}, )"
      R"({"name": "aten::addmm", "ph": "X", "ts": 660, "dur": 669, "tid": 1, "pid": "CPU functions", "args": {}}])";
  const Trace trace = read_trace_text(text, "legacy.json");
  EXPECT_EQ(trace.form, "array");
  ASSERT_EQ(trace.steps.size(), 1u);
  EXPECT_EQ(trace.steps[0].number, 0);
  ASSERT_EQ(trace.host.size(), 2u);
  EXPECT_EQ(trace.host[0].kind, HostKind::kOperator);
  EXPECT_EQ(trace.threads, (std::vector<std::string>{"\"CPU functions\"/1"}));
}

TEST(TraceReader, ReadsTorchperfTrainsOwnTraceFiles) {
  const std::string text =
      R"({"traceEvents": [{"ph": "X", "name": "step 3", "cat": "step", "pid": 1, "tid": 0, "ts": 0, "dur": 100},)"
      R"({"ph": "X", "name": "data wait", "cat": "phase", "pid": 1, "tid": 0, "ts": 0, "dur": 20},)"
      R"({"ph": "X", "name": "copy", "cat": "phase", "pid": 1, "tid": 0, "ts": 20, "dur": 5},)"
      R"({"ph": "X", "name": "forward", "cat": "phase", "pid": 1, "tid": 0, "ts": 25, "dur": 30},)"
      R"({"ph": "X", "name": "aten::conv2d", "cat": "cpu_op", "pid": 1, "tid": 5, "ts": 26, "dur": 20}],)"
      R"("displayTimeUnit": "ms"})";
  const Trace trace = read_trace_text(text, "train.json");
  ASSERT_EQ(trace.steps.size(), 1u);
  EXPECT_EQ(trace.steps[0].number, 3);
  ASSERT_EQ(trace.host.size(), 4u);
  EXPECT_EQ(trace.host[0].kind, HostKind::kDataLoader);
  EXPECT_EQ(trace.host[1].kind, HostKind::kCopy);
  EXPECT_EQ(trace.host[2].kind, HostKind::kAnnotation);
  EXPECT_EQ(trace.host[3].kind, HostKind::kOperator);
}

TEST(TraceReader, EventsWithMissingOrMistypedFieldsAreSkippedAndCounted) {
  TraceText t;
  t.op("ok", 0, 10)
      .raw(R"({"ph": "X", "name": "no dur", "ts": 1})")
      .raw(R"({"ph": "X", "name": "string ts", "ts": "1", "dur": 2})")
      .raw(R"({"ph": "X", "name": 12, "ts": 1, "dur": 2})")
      .raw(R"({"ph": "X", "name": "negative", "ts": 1, "dur": -2})")
      .raw(R"({"ph": "X", "name": "bad" "ts": 1, "dur": 2})")
      .raw(R"("not an object")")
      .raw(R"({"name": "no ph"})");
  const Trace trace = read_trace_text(t.json(), "t.json");
  EXPECT_EQ(trace.host.size(), 1u);
  EXPECT_EQ(trace.skips.missing_field, 2u);
  EXPECT_EQ(trace.skips.wrong_type, 4u);
  EXPECT_EQ(trace.skips.malformed, 1u);
  EXPECT_NE(trace.skips.first_problem.find("event 2 at byte "), std::string::npos)
      << trace.skips.first_problem;
  EXPECT_NE(trace.skips.first_problem.find("without \"dur\""), std::string::npos);
}

TEST(TraceReader, StrictMakesTheFirstBadEventAnErrorNamingItsPlace) {
  TraceText t;
  t.op("ok", 0, 10).raw(R"({"ph": "X", "name": "string ts", "ts": "1", "dur": 2})");
  const std::string e = error_of(t.json(), true);
  EXPECT_NE(e.find("t.json: event 2 at byte "), std::string::npos) << e;
  EXPECT_NE(e.find("\"ts\" is not a number) (--strict)"), std::string::npos) << e;
}

TEST(TraceReader, JsonWithoutTraceEventsIsRefusedInOneLine) {
  EXPECT_NE(error_of(R"({"schemaVersion": 1})")
                .find("t.json: no trace events: the JSON object "
                      "has no \"traceEvents\" array"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": []})").find("\"traceEvents\" is empty"), std::string::npos);
  EXPECT_NE(error_of("[]").find("the array is empty"), std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": {"a": 1}})").find("\"traceEvents\" is not an array"),
            std::string::npos);
  EXPECT_NE(error_of(R"([{"ph": "M", "name": "process_name"}, {"ph": "i"}])")
                .find("none of its 2 events is a complete event"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [{"ph": "X", "name": "x", "ts": 1, "dur": 1}, )")
                .find("truncated JSON"),
            std::string::npos);
}

TEST(TraceReader, ReadsEveryRealTraceFromA100V100Mi250CpuOnlyAndNccl) {
  struct Expected {
    const char* file;
    std::size_t steps;
    bool device;
    int rank;
  };
  for (const Expected& x : {Expected{"diff-control-a100.json.gz", 6, true, 3},
                            Expected{"diff-test-v100.json.gz", 6, true, 1},
                            Expected{"v100-ns-resolution-rank0.json.gz", 5, true, 0},
                            Expected{"alexnet-benchmark.json.gz", 0, true, 0},
                            Expected{"cpu-only-rank34.json.gz", 1, false, 34},
                            Expected{"mi250-rocm-train.json.gz", 2, true, -1},
                            Expected{"nccl-distributed.json.gz", 3, true, 0}}) {
    TraceReadOptions strict;
    strict.strict = true;  // PyTorch's own files have no bad events
    const Trace trace = read_trace(real_trace(x.file), strict);
    EXPECT_EQ(trace.form, "kineto") << x.file;
    EXPECT_TRUE(trace.compressed) << x.file;
    EXPECT_EQ(trace.steps.size(), x.steps) << x.file;
    EXPECT_EQ(!trace.device.empty(), x.device) << x.file;
    EXPECT_EQ(trace.rank, x.rank) << x.file;
    EXPECT_EQ(trace.skips.total(), 0u) << x.file;
    EXPECT_GT(trace.json_bytes, trace.file_bytes) << x.file;
  }
}

TEST(TraceReader, ParsingOnSeveralThreadsBuildsTheSameTraceAsOne) {
  TraceReadOptions one, several;
  one.threads = 1;
  several.threads = 3;
  several.batch_bytes = 64u << 10;  // about 500 batches, merged in order
  for (const char* name : {"diff-control-a100.json.gz", "v100-ns-resolution-rank0.json.gz"}) {
    const Trace a = read_trace(real_trace(name), one);
    const Trace b = read_trace(real_trace(name), several);
    EXPECT_EQ(a.events, b.events);
    EXPECT_EQ(a.ignored, b.ignored);
    EXPECT_EQ(a.threads, b.threads);
    ASSERT_EQ(a.host.size(), b.host.size());
    for (std::size_t i = 0; i < a.host.size(); ++i) {
      ASSERT_EQ(a.host[i].start, b.host[i].start) << i;
      ASSERT_EQ(a.host[i].duration, b.host[i].duration) << i;
      ASSERT_EQ(a.host[i].correlation, b.host[i].correlation) << i;
      ASSERT_EQ(a.host[i].kind, b.host[i].kind) << i;
      ASSERT_EQ(a.host[i].thread, b.host[i].thread) << i;
      ASSERT_EQ(a.name(a.host[i].name), b.name(b.host[i].name)) << i;
      ASSERT_EQ(a.name(a.host[i].shapes), b.name(b.host[i].shapes)) << i;
    }
    ASSERT_EQ(a.device.size(), b.device.size());
    for (std::size_t i = 0; i < a.device.size(); ++i) {
      ASSERT_EQ(a.device[i].start, b.device[i].start) << i;
      ASSERT_EQ(a.device[i].correlation, b.device[i].correlation) << i;
      ASSERT_EQ(a.name(a.device[i].name), b.name(b.device[i].name)) << i;
    }
    ASSERT_EQ(a.steps.size(), b.steps.size());
    EXPECT_EQ(a.first_ns, b.first_ns);
    EXPECT_EQ(a.last_ns, b.last_ns);
  }
}

TEST(TraceReader, OnSeveralThreadsTheFirstBadEventInFileOrderIsTheOneReported) {
  TraceText t;
  for (int i = 0; i < 3000; ++i) t.op("op" + std::to_string(i), i, 1);
  t.raw(R"({"ph": "X", "name": "first", "ts": "1", "dur": 2})");
  for (int i = 0; i < 3000; ++i) t.op("op", i, 1);
  t.raw(R"({"ph": "X", "name": "second", "dur": 2})");
  TraceReadOptions several;
  several.threads = 2;
  several.batch_bytes = 4096;
  const Trace lenient = read_trace_text(t.json(), "t.json", several);
  EXPECT_EQ(lenient.skips.total(), 2u);
  EXPECT_NE(lenient.skips.first_problem.find("event 3001 at byte"), std::string::npos)
      << lenient.skips.first_problem;
  several.strict = true;
  try {
    read_trace_text(t.json(), "t.json", several);
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("event 3001 at byte"), std::string::npos) << e.what();
  }
}

TEST(TraceReader, OnSeveralThreadsABadEventBeforeBadTextIsTheErrorWithStrict) {
  TraceText t;
  for (int i = 0; i < 2000; ++i) t.op("op", i, 1);
  t.raw(R"({"ph": "X", "name": "bad", "ts": "1", "dur": 2})");
  std::string text = t.json();
  text.resize(text.size() - 20);  // cut after the events: the text is bad after the bad event
  TraceReadOptions several;
  several.threads = 2;
  several.batch_bytes = 1u << 20;  // the bad event is still in the batch being filled
  several.strict = true;
  try {
    read_trace_text(text, "t.json", several);
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("event 2001 at byte"), std::string::npos) << e.what();
  }
}

TEST(TraceReader, ASkippedEventsArgumentsDoNotReachTheNextEvent) {
  TraceText t;
  t.raw(R"({"ph": "X", "name": "bad", "args": {"Input Dims": [[7]]}, "ts": "x", "dur": 1})")
      .op("next", 0, 1);
  const Trace trace = read_trace_text(t.json(), "t.json");
  ASSERT_EQ(trace.host.size(), 1u);
  EXPECT_EQ(trace.host[0].shapes, 0u);
}

TEST(TraceReader, TheNanosecondResolutionTraceKeepsItsSubMicrosecondTimes) {
  const Trace trace = read_trace(real_trace("v100-ns-resolution-rank0.json.gz"));
  const auto fractional = std::count_if(trace.device.begin(), trace.device.end(),
                                        [](const DeviceEvent& e) { return e.start % 1000 != 0; });
  EXPECT_GT(fractional, static_cast<long>(trace.device.size() / 2));
}

TEST(TraceReader, HipStreamAddressesAreStreamIdsThatStayApart) {
  TraceText t;
  for (const char* stream : {"\"0x0\"", "\"0x7f3a4c012340\"", "\"0x7f3a4c012341\"",
                             "\"0xffffffffffffffff\"", "\"zz\"", "3"})
    t.raw(std::string(R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 0, "ts": 1, "dur": 1, "args": {"stream": )") +
          stream + "}}");
  const Trace trace = read_trace_text(t.json(), "t.json");
  ASSERT_EQ(trace.device.size(), 6u);
  EXPECT_EQ(trace.device[0].stream, 0);
  EXPECT_GE(trace.device[1].stream, 0);
  EXPECT_GE(trace.device[2].stream, 0);
  EXPECT_NE(trace.device[1].stream, trace.device[2].stream);
  EXPECT_GE(trace.device[3].stream, 0);  // an address, not the unknown -1
  EXPECT_EQ(trace.device[4].stream, -1);
  EXPECT_EQ(trace.device[5].stream, 3);
}

TEST(TraceReader, AFolderListsItsTraceFilesAndAnEmptyFolderIsAnError) {
  const fs::path dir =
      fs::temp_directory_path() / ("torchperf-trace-files-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  EXPECT_THROW(trace_files(dir.string()), TraceError);
  std::ofstream(dir / "rank1.json.gz") << "";
  std::ofstream(dir / "rank0.json") << "";
  std::ofstream(dir / "notes.txt") << "";
  EXPECT_EQ(
      trace_files(dir.string()),
      (std::vector<std::string>{(dir / "rank0.json").string(), (dir / "rank1.json.gz").string()}));
  EXPECT_EQ(trace_files((dir / "notes.txt").string()),
            (std::vector<std::string>{(dir / "notes.txt").string()}));
  EXPECT_THROW(trace_files((dir / "missing").string()), TraceError);
  fs::remove_all(dir);
}

TEST(TraceReader, NoInputOfTheFuzzCorpusCrashesTheReaderOrTheAnalyses) {
  // The inputs libFuzzer found (scripts/fuzz_trace.sh): each is a trace or a TraceError, in
  // every build, so that ASan and UBSan see them in CI too.
  const fs::path corpus = fs::path(TORCHPERF_TEST_SOURCE_DIR) / "tests/fuzz/corpus/trace";
  std::size_t inputs = 0, read = 0;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    ++inputs;
    for (const bool strict : {false, true}) {
      TraceReadOptions options;
      options.strict = strict;
      try {
        analyze_trace(read_trace(entry.path().string(), options), true);
        read += strict ? 0 : 1;
      } catch (const TraceError& e) {
        EXPECT_NE(std::string(e.what()).find(entry.path().string()), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_GE(inputs, 5u);
  EXPECT_GE(read, 4u);  // the seeds are traces
}

}  // namespace
}  // namespace torchperf

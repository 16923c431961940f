#include "torchperf/trace/json_stream.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "torchperf/error.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

struct Collect : TraceVisitor {
  std::vector<std::string> events, keys, members;
  std::vector<std::uint64_t> offsets;
  void on_event(std::string_view json, std::uint64_t offset) override {
    events.emplace_back(json);
    offsets.push_back(offset);
  }
  void on_member(std::string_view key, std::string_view json) override {
    keys.emplace_back(key);
    members.emplace_back(json);
  }
};

// Hands out the text a few bytes at a time, so that every value crosses a read boundary.
class TrickleSource : public ByteSource {
 public:
  TrickleSource(std::string text, std::size_t step) : text_(std::move(text)), step_(step) {
    name_ = "trickle";
  }
  std::size_t read(char* out, std::size_t n) override {
    const std::size_t k = std::min({n, step_, text_.size() - at_});
    std::memcpy(out, text_.data() + at_, k);
    at_ += k;
    return k;
  }
  std::uint64_t consumed() const override { return at_; }
  std::uint64_t total() const override { return text_.size(); }
  bool compressed() const override { return false; }

 private:
  std::string text_;
  std::size_t step_, at_ = 0;
};

Collect split(const std::string& text) {
  Collect c;
  auto source = memory_byte_source(text, "t.json");
  split_trace_json(*source, c);
  return c;
}

std::string error_of(const std::string& text) {
  try {
    split(text);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

fs::path temp_dir() {
  const fs::path dir =
      fs::temp_directory_path() / ("torchperf-json-stream-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

void write_gzip(const fs::path& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  gzclose(f);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(JsonStream, SplitsTheObjectFormIntoEventsAndMembers) {
  const Collect c = split(
      R"({"schemaVersion": 1, "traceEvents": [{"a": 1}, {"b": [1, {"c": "}"}]}], "x": {"y": [1]}})");
  ASSERT_EQ(c.events.size(), 2u);
  EXPECT_EQ(c.events[0], R"({"a": 1})");
  EXPECT_EQ(c.events[1], R"({"b": [1, {"c": "}"}]})");
  EXPECT_EQ(c.keys, (std::vector<std::string>{"schemaVersion", "x"}));
  EXPECT_EQ(c.members[1], R"({"y": [1]})");
  EXPECT_EQ(c.offsets[0], 37u);
}

TEST(JsonStream, SplitsTheArrayFormOfOlderTraces) {
  const Collect c = split(R"([{"name": "aten::mm", "ph": "X"}, {"name": "x"}])");
  ASSERT_EQ(c.events.size(), 2u);
  EXPECT_TRUE(c.keys.empty());
  auto source = memory_byte_source("[{}]", "t");
  Collect d;
  const SplitResult r = split_trace_json(*source, d);
  EXPECT_FALSE(r.object_form);
  EXPECT_EQ(r.events, 1u);
}

TEST(JsonStream, EscapedQuotesAndBackslashesDoNotEndAStringAtAnyPositionInABlock) {
  // An escaped quote or backslash at every offset around the 16-byte blocks of the scanner.
  for (std::size_t pad = 0; pad < 40; ++pad) {
    const std::string name = std::string(pad, 'a') + R"(\"}]{[\\)" + std::string(pad % 7, 'b');
    const std::string event = R"({"name": ")" + name + R"(", "ph": "X"})";
    const Collect c = split("[" + event + ", {}]");
    ASSERT_EQ(c.events.size(), 2u) << pad;
    EXPECT_EQ(c.events[0], event) << pad;
  }
}

TEST(JsonStream, ValuesThatCrossEveryReadBoundaryAreWhole) {
  std::string text = R"({"deviceProperties": [{"id": 0, "name": "GPU"}], "traceEvents": [)";
  std::vector<std::string> events;
  for (int i = 0; i < 50; ++i) {
    events.push_back(R"({"ph": "X", "name": "op\"{)" + std::to_string(i) + R"(", "ts": )" +
                     std::to_string(i * 10) + "}");
    text += (i ? ",\n " : "") + events.back();
  }
  text += R"(], "traceName": "t"})";
  for (std::size_t step : {1u, 2u, 3u, 7u, 64u}) {
    TrickleSource source(text, step);
    Collect c;
    const SplitResult r = split_trace_json(source, c);
    EXPECT_TRUE(r.has_trace_events);
    EXPECT_EQ(c.events, events) << "step " << step;
    EXPECT_EQ(c.keys, (std::vector<std::string>{"deviceProperties", "traceName"}));
    EXPECT_EQ(r.bytes, text.size());
  }
}

TEST(JsonStream, AnEventLargerThanTheReadChunkIsHandedOverWhole) {
  const std::string big(9u << 20, 'x');
  const std::string event = R"({"name": ")" + big + R"("})";
  const Collect c = split("[" + event + ", {\"ph\": \"X\"}]");
  ASSERT_EQ(c.events.size(), 2u);
  EXPECT_EQ(c.events[0].size(), event.size());
  EXPECT_EQ(c.offsets[1], event.size() + 3);
}

TEST(JsonStream, TextThatIsNotJsonIsRefusedWithWhereAndWhat) {
  EXPECT_NE(error_of("hello").find("not JSON: expected '{' (a Kineto trace) or '[' (an older "
                                   "trace) at byte 0, found 'h'"),
            std::string::npos);
  EXPECT_NE(error_of("").find("found the end of the file"), std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [{}] x)").find("expected ',' or '}' at byte 21"),
            std::string::npos);
  EXPECT_NE(error_of(R"([{} {}])").find("expected ',' or ']' after event 1 at byte 4"),
            std::string::npos);
  EXPECT_NE(error_of(R"([{}] [])").find("unexpected '[' at byte 5 after the end"),
            std::string::npos);
  EXPECT_NE(error_of(R"({1: 2})").find("expected a member name at byte 1"), std::string::npos);
}

TEST(JsonStream, TruncatedTextSaysWhereItEndsAndHowManyEventsCameBefore) {
  const std::string text = R"({"traceEvents": [{"ph": "X"}, {"ph": "X"}, {"ph": )";
  const std::string e = error_of(text);
  EXPECT_NE(e.find("t.json: truncated JSON: the text ends at byte " + std::to_string(text.size()) +
                   ", inside the trace events (after 2 events)"),
            std::string::npos)
      << e;
  EXPECT_NE(error_of(R"({"traceEvents": [{}])").find("inside the top-level object"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [{}], "x": "abc)").find("truncated"), std::string::npos);
}

TEST(JsonStream, ReadsGzipAsAStreamAndPlainFilesAsTheyAre) {
  const fs::path dir = temp_dir();
  std::string text = R"({"traceEvents": [)";
  for (int i = 0; i < 20000; ++i)
    text += (i ? "," : "") + std::string(R"({"ph": "X", "i": )") + std::to_string(i) + "}";
  text += "]}";
  write_gzip(dir / "t.json.gz", text);
  std::ofstream(dir / "t.json") << text;
  for (const char* name : {"t.json.gz", "t.json"}) {
    auto source = open_byte_source((dir / name).string());
    EXPECT_EQ(source->compressed(), std::string(name) == "t.json.gz");
    Collect c;
    const SplitResult r = split_trace_json(*source, c);
    EXPECT_EQ(r.events, 20000u);
    EXPECT_EQ(r.bytes, text.size());
    EXPECT_EQ(c.events.back(), R"({"ph": "X", "i": 19999})");
  }
  fs::remove_all(dir);
}

TEST(JsonStream, ACorruptOrTruncatedGzipIsATraceErrorNamingTheFile) {
  const fs::path dir = temp_dir();
  std::string text = R"({"traceEvents": [)";
  for (int i = 0; i < 50000; ++i)
    text += (i ? "," : "") + std::string(R"({"ph": "X", "i": )") +
            std::to_string(i * 7919 % 100003) + "}";
  text += "]}";
  write_gzip(dir / "good.json.gz", text);
  const std::string gz = read_file(dir / "good.json.gz");
  std::string corrupt = gz;
  for (std::size_t i = 100; i < 200; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  std::ofstream(dir / "corrupt.json.gz", std::ios::binary) << corrupt;
  std::ofstream(dir / "short.json.gz", std::ios::binary) << gz.substr(0, gz.size() / 2);
  for (const char* name : {"corrupt.json.gz", "short.json.gz"}) {
    const std::string path = (dir / name).string();
    try {
      auto source = open_byte_source(path);
      Collect c;
      split_trace_json(*source, c);
      ADD_FAILURE() << name << " was read";
    } catch (const TraceError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(path + ": ", 0), 0u) << what;
      EXPECT_TRUE(what.find("gzip") != std::string::npos ||
                  what.find("truncated") != std::string::npos)
          << what;
    }
  }
  fs::remove_all(dir);
}

TEST(JsonStream, AMissingFileOrAFolderIsATraceError) {
  EXPECT_THROW(open_byte_source("/nonexistent/trace.json"), TraceError);
  EXPECT_THROW(open_byte_source(fs::temp_directory_path().string()), TraceError);
}

// Generates "[" + events forever (up to a size), then cuts the last one short: offsets past 4 GiB
// must be reported as they are.
class EndlessSource : public ByteSource {
 public:
  explicit EndlessSource(std::uint64_t size) : size_(size) {
    name_ = "endless";
    event_ =
        R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"s": "\"}"}},)";
    while (block_.size() < (1u << 20)) block_ += event_;
  }
  std::size_t read(char* out, std::size_t n) override {
    if (at_ >= size_) return 0;
    std::size_t k = 0;
    if (at_ == 0) {
      out[0] = '[';
      ++k;
      ++at_;
    }
    while (k < n && at_ < size_) {
      const std::size_t in_block = (at_ - 1) % block_.size();
      const std::size_t m = std::min<std::uint64_t>({n - k, block_.size() - in_block, size_ - at_});
      std::memcpy(out + k, block_.data() + in_block, m);
      k += m;
      at_ += m;
    }
    return k;
  }
  std::uint64_t consumed() const override { return at_; }
  std::uint64_t total() const override { return size_; }
  bool compressed() const override { return false; }
  std::size_t event_size() const { return event_.size(); }

 private:
  std::uint64_t size_, at_ = 0;
  std::string event_, block_;
};

struct Count : TraceVisitor {
  std::uint64_t events = 0, last_offset = 0;
  void on_event(std::string_view, std::uint64_t offset) override {
    ++events;
    last_offset = offset;
  }
  void on_member(std::string_view, std::string_view) override {}
};

TEST(JsonStream, OffsetsBeyondFourGibibytesAreCountedInSixtyFourBits) {
  const std::uint64_t size = (std::uint64_t{1} << 32) + 12345;
  EndlessSource source(size);
  Count count;
  try {
    split_trace_json(source, count);
    FAIL() << "the cut-off event was not noticed";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("the text ends at byte " + std::to_string(size)),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(count.events, (size - 1) / source.event_size());
  EXPECT_GT(count.last_offset, std::uint64_t{1} << 32);
}

}  // namespace
}  // namespace torchperf

#include "torchperf/trace/json_stream.h"

#include <unistd.h>

#include <zlib.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "torchperf/error.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

// gzread reads a file that is not gzip as it is, so one reader serves both forms.
class FileByteSource : public ByteSource {
 public:
  explicit FileByteSource(const std::string& path) {
    name_ = path;
    std::error_code ec;
    if (fs::is_directory(path, ec))
      throw TraceError(path + ": is a folder; expected a trace file (.json or .json.gz)");
    // A pipe (`-` for standard input, or <(zcat …)) streams like a file; only its size, for
    // the progress bar, is unknown.
    const bool stdin_stream = path == "-";
    if (!stdin_stream && fs::is_regular_file(path, ec)) {
      total_ = fs::file_size(path, ec);
      if (ec) throw TraceError(path + ": cannot read the trace: " + ec.message());
    }
    file_ = stdin_stream ? gzdopen(::dup(STDIN_FILENO), "rb") : gzopen64(path.c_str(), "rb");
    if (file_ == nullptr)
      throw TraceError(path + ": cannot open the trace: " + std::strerror(errno));
    gzbuffer(file_, 1u << 18);
    compressed_ = gzdirect(file_) == 0;
  }
  ~FileByteSource() override { gzclose(file_); }

  std::size_t read(char* out, std::size_t n) override {
    const unsigned ask = static_cast<unsigned>(std::min<std::size_t>(n, 1u << 30));
    const int got = gzread(file_, out, ask);
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(file_, &code);
      throw TraceError(name_ + ": the gzip stream is corrupt (" +
                       std::string(message != nullptr ? message : "unknown zlib error") +
                       ", after " + std::to_string(gzoffset64(file_)) + " compressed bytes)");
    }
    // zlib reports a gzip that ends mid-stream as an error only on the next call; ask for it.
    if (got == 0) {
      int code = 0;
      const char* message = gzerror(file_, &code);
      if (code != Z_OK && code != Z_STREAM_END)
        throw TraceError(name_ + ": the gzip stream is truncated or corrupt (" +
                         std::string(message) + ")");
    }
    return static_cast<std::size_t>(got);
  }
  std::uint64_t consumed() const override {
    const auto at = gzoffset64(file_);
    return at < 0 ? 0 : static_cast<std::uint64_t>(at);
  }
  std::uint64_t total() const override { return total_; }
  bool compressed() const override { return compressed_; }

 private:
  gzFile file_ = nullptr;
  std::uint64_t total_ = 0;
  bool compressed_ = false;
};

// Reads (and inflates) the next chunks on a thread of its own while the caller parses: with
// gzip, inflating is as much work as parsing, and the two overlap on two cores.
class PrefetchingByteSource : public ByteSource {
 public:
  explicit PrefetchingByteSource(std::unique_ptr<ByteSource> inner) : inner_(std::move(inner)) {
    name_ = inner_->name();
    total_ = inner_->total();
    compressed_ = inner_->compressed();
    thread_ = std::thread([this] { produce(); });
  }
  ~PrefetchingByteSource() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  std::size_t read(char* out, std::size_t n) override {
    std::size_t given = 0;
    while (given < n) {
      if (at_ == current_.size) {
        std::unique_lock<std::mutex> lock(mutex_);
        // The chunk read is handed back to be filled again: no allocation, no zeroing.
        if (current_.bytes) free_.push_back(std::move(current_.bytes));
        current_ = Chunk{};
        at_ = 0;
        changed_.notify_all();
        changed_.wait(lock, [&] { return !ready_.empty() || done_; });
        if (ready_.empty()) {
          if (error_) std::rethrow_exception(error_);
          break;
        }
        current_ = std::move(ready_.front());
        ready_.pop_front();
        consumed_ = current_.consumed_after;
        changed_.notify_all();
      }
      const std::size_t k = std::min(n - given, current_.size - at_);
      std::memcpy(out + given, current_.bytes.get() + at_, k);
      at_ += k;
      given += k;
    }
    return given;
  }
  std::uint64_t consumed() const override { return consumed_; }
  std::uint64_t total() const override { return total_; }
  bool compressed() const override { return compressed_; }

 private:
  struct Chunk {
    std::unique_ptr<char[]> bytes;
    std::size_t size = 0;
    std::uint64_t consumed_after = 0;
  };
  static constexpr std::size_t kChunkBytes = 4u << 20;
  static constexpr std::size_t kAhead = 3;

  void produce() {
    try {
      for (;;) {
        Chunk chunk;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (!free_.empty()) {
            chunk.bytes = std::move(free_.back());
            free_.pop_back();
          }
        }
        if (!chunk.bytes) chunk.bytes.reset(new char[kChunkBytes]);
        std::size_t filled = 0;
        while (filled < kChunkBytes) {
          const std::size_t got = inner_->read(chunk.bytes.get() + filled, kChunkBytes - filled);
          if (got == 0) break;
          filled += got;
        }
        chunk.size = filled;
        chunk.consumed_after = inner_->consumed();
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return ready_.size() < kAhead || stop_; });
        if (stop_) return;
        const bool last = filled == 0;
        if (!last) ready_.push_back(std::move(chunk));
        if (last) {
          done_ = true;
          changed_.notify_all();
          return;
        }
        changed_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      done_ = true;
      changed_.notify_all();
    }
  }

  std::unique_ptr<ByteSource> inner_;
  std::uint64_t total_ = 0;
  bool compressed_ = false;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Chunk> ready_;
  std::vector<std::unique_ptr<char[]>> free_;
  bool done_ = false, stop_ = false;
  std::exception_ptr error_;
  Chunk current_;
  std::size_t at_ = 0;
  std::uint64_t consumed_ = 0;
};

class MemoryByteSource : public ByteSource {
 public:
  MemoryByteSource(std::string_view text, const std::string& name) : text_(text) { name_ = name; }
  std::size_t read(char* out, std::size_t n) override {
    const std::size_t k = std::min(n, text_.size() - at_);
    std::memcpy(out, text_.data() + at_, k);
    at_ += k;
    return k;
  }
  std::uint64_t consumed() const override { return at_; }
  std::uint64_t total() const override { return text_.size(); }
  bool compressed() const override { return false; }

 private:
  std::string_view text_;
  std::size_t at_ = 0;
};

constexpr std::size_t kNotFound = static_cast<std::size_t>(-1);
constexpr std::size_t kChunk = 4u << 20;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string describe_char(int c) {
  if (c < 0) return "the end of the file";
  if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", c & 0xff);
  return std::string("byte ") + hex;
}

// The splitter keeps one buffer: [pos_, end_) is read and not yet consumed. A value is scanned
// for its end (strings and nesting only; simdjson or nlohmann validate it afterwards), and when
// the buffer ends inside it, the value is moved to the front and more is read.
class Splitter {
 public:
  Splitter(ByteSource& source, TraceVisitor& visitor, const SplitProgress& progress)
      : source_(source),
        visitor_(visitor),
        progress_(progress),
        // Small inputs (and the fuzzer's) get a small buffer; it grows as values need.
        buf_(std::min<std::uint64_t>(kChunk, std::max<std::uint64_t>(source.total(), 4096)) +
             kJsonPadding),
        next_report_(progress.every_bytes) {}

  SplitResult run() {
    const int first = peek();
    if (first == '{') {
      ++pos_;
      result_.object_form = true;
      read_object();
    } else if (first == '[') {
      read_events("the top-level array");
    } else {
      fail("not JSON: expected '{' (a Kineto trace) or '[' (an older trace) at byte " +
           std::to_string(offset(pos_)) + ", found " + describe_char(first));
    }
    const int rest = peek();
    if (rest >= 0)
      fail("unexpected " + describe_char(rest) + " at byte " + std::to_string(offset(pos_)) +
           " after the end of the trace's JSON");
    result_.events = events_;
    result_.bytes = offset(end_);
    return result_;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw TraceError(source_.name() + ": " + what);
  }

  std::uint64_t offset(std::size_t index) const { return base_ + index; }

  // Moves [keep, end_) to the front, then reads at least one more byte unless at the end.
  bool refill(std::size_t keep) {
    if (eof_) return false;
    const std::size_t kept = end_ - keep;
    if (keep > 0) {
      std::memmove(buf_.data(), buf_.data() + keep, kept);
      base_ += keep;
      pos_ -= keep;
    }
    end_ = kept;
    const std::size_t capacity = buf_.size() - kJsonPadding;
    if (capacity - end_ < std::min(kChunk, capacity) / 2) buf_.resize(capacity * 2 + kJsonPadding);
    const std::size_t got = source_.read(buf_.data() + end_, buf_.size() - kJsonPadding - end_);
    if (got == 0) {
      eof_ = true;
      std::memset(buf_.data() + end_, ' ', kJsonPadding);
      return false;
    }
    end_ += got;
    std::memset(buf_.data() + end_, ' ', kJsonPadding);
    if (progress_.report && source_.consumed() >= next_report_) {
      progress_.report(source_.consumed(), source_.total());
      next_report_ = source_.consumed() + progress_.every_bytes;
    }
    return true;
  }

  int peek() {
    for (;;) {
      while (pos_ < end_ && is_space(buf_[pos_])) ++pos_;
      if (pos_ < end_) return static_cast<unsigned char>(buf_[pos_]);
      if (!refill(pos_)) return -1;
    }
  }

  // One past the end of the value starting at `start`, or kNotFound if the buffer ends first.
  std::size_t scan_value(std::size_t start) const {
    const char* b = buf_.data();
    std::size_t i = start;
    const char c = b[i];
    if (c == '"') return scan_string(i);
    if (c != '{' && c != '[') {
      while (i < end_ && !is_space(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']') ++i;
      return i < end_ || eof_ ? i : kNotFound;
    }
    return scan_container(i);
  }

#if defined(__SSE2__)
  // The bytes that matter for nesting, 16 at a time: quotes, backslashes, brackets, braces.
  static unsigned special_mask(const char* at) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    const auto eq = [&](char c) { return _mm_cmpeq_epi8(v, _mm_set1_epi8(c)); };
    const __m128i any =
        _mm_or_si128(_mm_or_si128(_mm_or_si128(eq('"'), eq('\\')), _mm_or_si128(eq('{'), eq('}'))),
                     _mm_or_si128(eq('['), eq(']')));
    return static_cast<unsigned>(_mm_movemask_epi8(any));
  }

  // One past the object or array at `start`, or kNotFound. Reads up to 15 bytes past end_,
  // which the padding covers.
  std::size_t scan_container(std::size_t start) const {
    const char* b = buf_.data();
    int depth = 0;
    bool in_string = false, skip_first = false;
    for (std::size_t i = start; i < end_; i += 16) {
      unsigned mask = special_mask(b + i);
      if (skip_first) {
        mask &= ~1u;
        skip_first = false;
      }
      while (mask != 0) {
        const unsigned bit = static_cast<unsigned>(__builtin_ctz(mask));
        mask &= mask - 1;
        const std::size_t j = i + bit;
        if (j >= end_) return kNotFound;
        const char c = b[j];
        if (in_string) {
          if (c == '"') {
            in_string = false;
          } else if (c == '\\') {  // the next byte is escaped, whatever it is
            if (bit == 15)
              skip_first = true;
            else
              mask &= ~(1u << (bit + 1));
          }
          continue;
        }
        if (c == '"') {
          in_string = true;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          if (--depth == 0) return j + 1;
        }
      }
    }
    return kNotFound;
  }
#else
  std::size_t scan_container(std::size_t i) const {
    const char* b = buf_.data();
    int depth = 0;
    while (i < end_) {
      switch (b[i]) {
        case '"':
          i = scan_string(i);
          if (i == kNotFound) return kNotFound;
          continue;
        case '{':
        case '[':
          ++depth;
          break;
        case '}':
        case ']':
          if (--depth == 0) return i + 1;
          break;
        default:
          break;
      }
      ++i;
    }
    return kNotFound;
  }
#endif

  std::size_t scan_string(std::size_t i) const {
    const char* b = buf_.data();
    for (++i; i < end_; ++i) {
      const char c = b[i];
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        return i + 1;
      }
    }
    return kNotFound;
  }

  // The value at pos_, whole in the buffer; consumes it.
  std::string_view take_value(const char* where) {
    if (peek() < 0) truncated(where);
    std::size_t end = scan_value(pos_);
    while (end == kNotFound) {
      if (!refill(pos_)) {
        end = scan_value(pos_);
        if (end == kNotFound || end > end_) truncated(where);
        break;
      }
      end = scan_value(pos_);
    }
    std::string_view value(buf_.data() + pos_, end - pos_);
    pos_ = end;
    return value;
  }

  [[noreturn]] void truncated(const char* where) {
    fail("truncated JSON: the text ends at byte " + std::to_string(offset(end_)) + ", inside " +
         where + " (after " + std::to_string(events_) + " events)");
  }

  void expect(char c, const char* where) {
    const int got = peek();
    if (got < 0) truncated(where);
    if (got != c)
      fail(std::string("not JSON: expected '") + c + "' at byte " + std::to_string(offset(pos_)) +
           " in " + where + ", found " + describe_char(got));
    ++pos_;
  }

  void read_object() {
    if (peek() == '}') {
      ++pos_;
      return;
    }
    for (;;) {
      if (peek() != '"') {
        if (peek() < 0) truncated("the top-level object");
        fail("not JSON: expected a member name at byte " + std::to_string(offset(pos_)) +
             ", found " + describe_char(peek()));
      }
      const std::string_view quoted = take_value("a member name");
      const std::string key(quoted.substr(1, quoted.size() - 2));
      expect(':', "the top-level object");
      if (key == "traceEvents" && peek() == '[') {
        read_events("the trace events");
        result_.has_trace_events = true;
      } else {
        visitor_.on_member(key, take_value("the top-level object"));
      }
      const int next = peek();
      if (next == ',') {
        ++pos_;
        continue;
      }
      if (next == '}') {
        ++pos_;
        return;
      }
      if (next < 0) truncated("the top-level object");
      fail("not JSON: expected ',' or '}' at byte " + std::to_string(offset(pos_)) +
           " in the top-level object, found " + describe_char(next));
    }
  }

  void read_events(const char* where) {
    expect('[', where);
    if (peek() == ']') {
      ++pos_;
      return;
    }
    for (;;) {
      const int first = peek();
      if (first < 0) truncated(where);
      const std::uint64_t at = offset(pos_);
      const std::string_view event = take_value(where);
      // Padding after the value: the buffer always holds kJsonPadding bytes past end_.
      visitor_.on_event(event, at);
      ++events_;
      const int next = peek();
      if (next == ',') {
        ++pos_;
        continue;
      }
      if (next == ']') {
        ++pos_;
        return;
      }
      if (next < 0) truncated(where);
      fail("not JSON: expected ',' or ']' after event " + std::to_string(events_) + " at byte " +
           std::to_string(offset(pos_)) + ", found " + describe_char(next));
    }
  }

  ByteSource& source_;
  TraceVisitor& visitor_;
  const SplitProgress& progress_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  std::uint64_t base_ = 0;  // offset of buf_[0] in the JSON text
  bool eof_ = false;
  std::uint64_t events_ = 0;
  std::uint64_t next_report_ = 0;
  SplitResult result_;
};

}  // namespace

std::unique_ptr<ByteSource> open_byte_source(const std::string& path) {
  return std::make_unique<PrefetchingByteSource>(std::make_unique<FileByteSource>(path));
}

std::unique_ptr<ByteSource> memory_byte_source(std::string_view text, const std::string& name) {
  return std::make_unique<MemoryByteSource>(text, name);
}

SplitResult split_trace_json(ByteSource& source, TraceVisitor& visitor,
                             const SplitProgress& progress) {
  Splitter splitter(source, visitor, progress);
  return splitter.run();
}

}  // namespace torchperf

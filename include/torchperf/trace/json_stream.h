// A Chrome-trace JSON file split into its parts without building its DOM: the trace events one at
// a time, as raw JSON text, and the other top-level members (small) whole. Plain or gzip, read as
// a stream in fixed-size chunks, so memory does not grow with the file. Torch-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace torchperf {

// Bytes readable after every view handed to a visitor, so that simdjson (which reads in 64-byte
// blocks) can parse it in place.
inline constexpr std::size_t kJsonPadding = 64;

// Where the bytes come from: a file (plain or gzip, told apart by its magic bytes) or memory.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to n bytes into out; 0 at the end. TraceError for a corrupt or truncated gzip.
  virtual std::size_t read(char* out, std::size_t n) = 0;
  // Bytes of the underlying file consumed so far, and its size (for progress; 0 when unknown).
  virtual std::uint64_t consumed() const = 0;
  virtual std::uint64_t total() const = 0;
  virtual bool compressed() const = 0;
  const std::string& name() const { return name_; }

 protected:
  std::string name_;
};

// TraceError naming the path when it is missing or unreadable. gzip streams are inflated by
// zlib as they are read (multi-member files and files over 4 GB included).
std::unique_ptr<ByteSource> open_byte_source(const std::string& path);
// The text is not copied: it must outlive the source.
std::unique_ptr<ByteSource> memory_byte_source(std::string_view text, const std::string& name);

class TraceVisitor {
 public:
  virtual ~TraceVisitor() = default;
  // One element of `traceEvents` (or of the top-level array of the older form): its text, with
  // kJsonPadding readable bytes after it, and the offset of its first byte in the JSON text.
  virtual void on_event(std::string_view json, std::uint64_t offset) = 0;
  // Any other top-level member of the object form, e.g. "deviceProperties": its raw value.
  virtual void on_member(std::string_view key, std::string_view json) = 0;
};

struct SplitProgress {
  std::function<void(std::uint64_t consumed, std::uint64_t total)> report;
  std::uint64_t every_bytes = 64u << 20;
};

struct SplitResult {
  std::uint64_t events = 0;
  std::uint64_t bytes = 0;        // of JSON text (after decompression)
  bool object_form = false;       // {"traceEvents": [...], ...} rather than [...]
  bool has_trace_events = false;  // the object form has a "traceEvents" array
};

// Reads the whole source: the object form {"traceEvents": [...], ...} or the array form
// [...]. Throws TraceError naming the source and the byte offset for text that is not JSON,
// text that ends early ("truncated at byte N, inside the trace events, after K events") and
// data after the trace.
SplitResult split_trace_json(ByteSource& source, TraceVisitor& visitor,
                             const SplitProgress& progress = {});

}  // namespace torchperf

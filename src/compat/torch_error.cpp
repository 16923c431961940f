#include "torchperf/compat/torch_error.h"

#include <regex>
#include <sstream>
#include <vector>

namespace torchperf::compat {

std::string concise_error_message(const std::string& what) {
  std::istringstream in(what);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  // TorchScript interpreter errors end their traceback with "RuntimeError: <message>".
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    for (const char* tag : {"RuntimeError: ", "ValueError: ", "IndexError: ", "TypeError: "}) {
      const auto pos = it->find(tag);
      if (pos != std::string::npos) return it->substr(pos + std::string(tag).size());
    }
  }
  for (std::string line : lines) {
    // c10::Error's what() appends "Exception raised from …" and a backtrace after the message.
    if (line.rfind("Exception raised from", 0) == 0) break;
    // Caffe2's CAFFE_ENFORCE opens with where it failed ("[enforce fail at
    // inline_container.cc:747] . "): LibTorch's source line, not the user's cause.
    if (line.rfind("[enforce fail at ", 0) == 0) {
      const auto end = line.find("] ");
      if (end != std::string::npos) line = line.substr(end + 2);
      if (line.rfind(". ", 0) == 0) line = line.substr(2);
    }
    if (!line.empty()) return line;
  }
  return what;
}

bool is_out_of_memory_message(const std::string& message) {
  for (const char* sign : {"out of memory", "can't allocate memory", "Cannot allocate memory",
                           "not enough memory", "std::bad_alloc"})
    if (message.find(sign) != std::string::npos) return true;
  return false;
}

std::optional<std::int64_t> requested_allocation_bytes(const std::string& message) {
  static const std::regex cpu(R"(allocate (\d+) bytes)");
  static const std::regex cuda(R"(Tried to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB))");
  std::smatch m;
  try {
    if (std::regex_search(message, m, cpu)) return std::stoll(m[1].str());
    if (std::regex_search(message, m, cuda)) {
      const std::string unit = m[2].str();
      const int shift = unit == "TiB" ? 40 : unit == "GiB" ? 30 : unit == "MiB" ? 20
                                           : unit == "KiB" ? 10 : 0;
      return static_cast<std::int64_t>(std::stod(m[1].str()) * static_cast<double>(1LL << shift));
    }
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace torchperf::compat

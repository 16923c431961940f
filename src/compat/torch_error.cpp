#include "torchperf/compat/torch_error.h"

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
  for (const auto& line : lines) {
    // c10::Error's what() appends "Exception raised from …" and a backtrace after the message.
    if (line.rfind("Exception raised from", 0) == 0) break;
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

}  // namespace torchperf::compat

// A torchperf worker with faults on demand, for tests only: TORCHPERF_TEST_FAULT lists
// "KIND@knob=value[+knob=value…]" entries separated by ';' (KIND: crash, hang, oom); a measure or
// compare job whose configuration holds every knob=value then aborts, hangs or allocates until it
// is killed.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "torchperf/worker/worker.h"
#include "torchperf/worker/worker_process.h"

namespace {

bool holds(const std::string& configuration, const std::string& settings) {
  const std::string padded = "," + configuration + ",";
  std::size_t start = 0;
  while (start <= settings.size()) {
    const auto plus = settings.find('+', start);
    const std::string one = settings.substr(start, plus == std::string::npos ? plus : plus - start);
    if (padded.find("," + one + ",") == std::string::npos) return false;
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return true;
}

void inject(const std::string& configuration) {
  const char* spec = std::getenv("TORCHPERF_TEST_FAULT");
  if (!spec) return;
  std::string text = spec;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find(';', start);
    const std::string entry = text.substr(start, end == std::string::npos ? end : end - start);
    start = end == std::string::npos ? text.size() : end + 1;
    const auto at = entry.find('@');
    if (at == std::string::npos || !holds(configuration, entry.substr(at + 1))) continue;
    const std::string kind = entry.substr(0, at);
    if (kind == "crash") std::abort();
    if (kind == "hang")
      while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
    if (kind == "oom") {
      std::vector<char*> hoard;
      while (true) {
        char* block = static_cast<char*>(std::malloc(64 << 20));
        if (!block) continue;
        std::memset(block, 1, 64 << 20);  // resident, not just reserved
        hoard.push_back(block);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "__worker")
    return torchperf::run_worker(STDIN_FILENO, torchperf::kWorkerResponseFd, inject);
  return 2;
}

#include "stop_signals.h"

#include <atomic>

#include "exit_codes.h"

namespace torchperf::cli {
namespace {

std::atomic<int> received{0};

extern "C" void on_stop_request(int sig) { received = sig; }

}  // namespace

StopSignals::StopSignals() {
  received = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_request;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &previous_int_);
  ::sigaction(SIGTERM, &action, &previous_term_);
}

StopSignals::~StopSignals() {
  ::sigaction(SIGINT, &previous_int_, nullptr);
  ::sigaction(SIGTERM, &previous_term_, nullptr);
}

bool StopSignals::requested() { return received.load() != 0; }

int stop_signal_exit_code() { return received.load() == SIGTERM ? kTerminated : kInterrupted; }

const char* stop_signal_name() { return received.load() == SIGTERM ? "SIGTERM" : "Ctrl-C"; }

}  // namespace torchperf::cli

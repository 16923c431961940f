// SIGINT (Ctrl-C) and SIGTERM (timeout, systemd, Slurm, Kubernetes) ask a long command to stop:
// it stops its workers, keeps what finished, says how to continue, and exits 128 + the signal.
// Installed for the life of a StopSignals object; the previous handlers come back after it.
#pragma once

#include <csignal>

namespace torchperf::cli {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  // True once either signal arrived.
  static bool requested();

 private:
  struct sigaction previous_int_ {}, previous_term_ {};
};

// The exit code of a command stopped by a signal: kTerminated after SIGTERM, else kInterrupted.
int stop_signal_exit_code();
// "SIGTERM" or "Ctrl-C", for messages.
const char* stop_signal_name();

}  // namespace torchperf::cli

// A one-line progress bar with ETA on stderr, drawn only when stderr is a terminal.
#pragma once

#include <chrono>
#include <string>

namespace torchperf::cli {

class ProgressBar {
 public:
  explicit ProgressBar(bool enabled);
  ~ProgressBar();
  // fraction in [0, 1] of the phase; expected_s is the phase's expected length, for the ETA.
  void update(const std::string& phase, double fraction, double expected_s);
  // A bar followed by free text and an ETA in seconds (long runs: minutes shown).
  void show(double fraction, const std::string& text, double eta_s);
  void finish();

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace torchperf::cli

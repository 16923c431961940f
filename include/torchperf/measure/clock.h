// The one clock every timing goes through. Production code reads the steady clock; tests inject a
// TimeSource whose time they script, so the stopping rule is tested without sleeping.
#pragma once

#include <chrono>
#include <cstdint>

namespace torchperf {

using Clock = std::chrono::steady_clock;
using Nanoseconds = std::chrono::nanoseconds;

class TimeSource {
 public:
  virtual ~TimeSource() = default;
  virtual Clock::time_point now() = 0;
};

class SteadyTimeSource final : public TimeSource {
 public:
  Clock::time_point now() override { return Clock::now(); }
};

// The steady clock as a TimeSource, for code that is handed none (a knob's preparation).
inline TimeSource& steady_time() {
  static SteadyTimeSource time;
  return time;
}

// A clock a test drives by hand: now() returns whatever advance() has accumulated.
class ManualTimeSource final : public TimeSource {
 public:
  Clock::time_point now() override { return Clock::time_point(elapsed_); }
  void advance(Nanoseconds delta) { elapsed_ += delta; }

 private:
  Nanoseconds elapsed_{0};
};

inline double to_seconds(Nanoseconds ns) { return std::chrono::duration<double>(ns).count(); }

}  // namespace torchperf

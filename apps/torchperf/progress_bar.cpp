#include "progress_bar.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace torchperf::cli {

ProgressBar::ProgressBar(bool enabled) : enabled_(enabled) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(const std::string& phase, double fraction, double expected_s) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && fraction < 1 && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int width = 30;
  const int filled = static_cast<int>(fraction * width);
  const double eta = expected_s * (1 - fraction);
  std::fprintf(stderr, "\r[%s%s] %3.0f%% %-24s ETA %4.1fs ", std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), fraction * 100, phase.c_str(), eta);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::show(double fraction, const std::string& text, double eta_s) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int width = 20;
  const int filled = static_cast<int>(fraction * width);
  const long eta = std::lround(std::max(0.0, eta_s));
  const std::string eta_text = eta >= 3600 ? fmt::format("{}h{:02}m", eta / 3600, eta % 3600 / 60)
                               : eta >= 60 ? fmt::format("{}m{:02}s", eta / 60, eta % 60)
                                           : fmt::format("{}s", eta);
  std::string line = fmt::format("[{}{}] {:3.0f}% {} ETA {}", std::string(filled, '#'),
                                 std::string(width - filled, '.'), fraction * 100, text, eta_text);
  if (line.size() > 118) line = line.substr(0, 115) + "...";
  std::fprintf(stderr, "\r%-118s", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (enabled_ && drawn_) {
    std::fprintf(stderr, "\r%s\r", std::string(120, ' ').c_str());
    std::fflush(stderr);
    drawn_ = false;
  }
}

}  // namespace torchperf::cli

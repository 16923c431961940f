#include "torchperf/process/process_age.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace torchperf {

double process_age_from(const std::string& stat_line, double uptime_s, long ticks_per_s) {
  // Fields after the command name's closing parenthesis start at the 3rd; the start time is the
  // 22nd (proc(5)).
  const auto close = stat_line.rfind(')');
  if (close == std::string::npos || ticks_per_s <= 0) return std::nan("");
  std::istringstream fields(stat_line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i)
    if (!(fields >> field)) return std::nan("");
  char* end = nullptr;
  const double ticks = std::strtod(field.c_str(), &end);
  if (end == field.c_str() || *end != '\0') return std::nan("");
  return std::max(0.0, uptime_s - ticks / static_cast<double>(ticks_per_s));
}

double seconds_since_process_start() {
  std::ifstream stat("/proc/self/stat"), uptime("/proc/uptime");
  std::string line;
  double up = 0;
  if (!std::getline(stat, line) || !(uptime >> up)) return std::nan("");
  return process_age_from(line, up, ::sysconf(_SC_CLK_TCK));
}

}  // namespace torchperf

#include "budget_option.h"

#include <cmath>

#include "torchperf/sweep/tune_options.h"

namespace torchperf::cli {

std::string duration_text(double seconds) {
  if (!(seconds > 0)) return "0";
  const long long s = std::llround(seconds);
  std::string out;
  if (s >= 3600) out += std::to_string(s / 3600) + "h";
  if (s % 3600 >= 60) out += std::to_string(s % 3600 / 60) + "m";
  if (s % 60 != 0 || out.empty()) out += std::to_string(s % 60) + "s";
  return out;
}

CLI::Option* add_budget_option(CLI::App* cmd, std::string& text, double default_s,
                               const std::string& what) {
  text = duration_text(default_s);
  return cmd->add_option("--budget", text, what + ": 90s, 20m, 1h30m (a bare number is seconds)")
      ->default_val(text);
}

double budget_seconds(const std::string& text) { return parse_duration(text, "--budget"); }

}  // namespace torchperf::cli

// The one --budget of tune, train and serve-tune: a duration in one grammar (90, 90s, 20m, 1h30m;
// a bare number is seconds; 0 where the command runs without a limit), its default the command's
// options' own (TuneOptions, LadderOptions, ServeTuneOptions), written nowhere else.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace torchperf::cli {

// Adds --budget to cmd, reading into text, shown with the default default_s.
CLI::Option* add_budget_option(CLI::App* cmd, std::string& text, double default_s,
                               const std::string& what);
// The seconds text names (UsageError naming --budget and the grammar otherwise).
double budget_seconds(const std::string& text);
// "30m", "90s", "1h30m", "0": how a default is shown and passed on.
std::string duration_text(double seconds);

}  // namespace torchperf::cli

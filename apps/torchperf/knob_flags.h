// One command-line flag per knob (--NAME VALUE), generated from the registry so that a new knob
// needs no CLI change; bench and train share it, tune its names and help.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "torchperf/config/knob.h"

namespace torchperf::cli {

// "--cudnn-benchmark" for cudnn_benchmark.
std::string knob_flag(const Knob& knob);
// What the flag accepts, for help: "a positive integer" or "off|on".
std::string knob_values_help(const Knob& knob);

// Each flag stores its value under the knob's name in *values.
void add_knob_flags(CLI::App& cmd, const std::vector<Knob>& knobs,
                    std::shared_ptr<std::map<std::string, std::string>> values);

}  // namespace torchperf::cli

// One command-line flag per knob (--NAME VALUE), generated from the registry so that a new knob
// needs no CLI change; bench and train share it.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "torchperf/config/knob.h"

namespace torchperf::cli {

// Each flag stores its value under the knob's name in *values.
void add_knob_flags(CLI::App& cmd, const std::vector<Knob>& knobs,
                    std::shared_ptr<std::map<std::string, std::string>> values);

}  // namespace torchperf::cli

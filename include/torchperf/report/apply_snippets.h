// Code that applies a run's winner: a C++ (LibTorch) and a Python (PyTorch) program that load the
// model and run it configured as the winner, written from each knob's KnobCode declaration, and
// the configuration file that `torchperf bench --config FILE` and read_configuration_file accept.
#pragma once

#include <string>

#include "torchperf/analysis/run_analysis.h"
#include "torchperf/config/configuration_file.h"

namespace torchperf {

struct ApplySnippets {
  ConfigurationFile config;
  std::string config_json;  // config as an indented JSON document
  std::string cpp;          // a complete program: main() loads argv[1] (or the run's model file)
  std::string python;       // a complete script, likewise
  bool python_first = false;  // the winner runs in Python: its snippet is the one to show first
};

// Throws UsageError when the run has no winner.
ApplySnippets make_apply_snippets(const RunAnalysis& analysis);

}  // namespace torchperf

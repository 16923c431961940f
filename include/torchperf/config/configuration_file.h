// A configuration saved as a JSON file: `report` writes the winner's, and `bench --config FILE`
// and the library (read_configuration_file) read it back, so a tuned setting travels as a file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/config/configuration.h"

namespace torchperf {

inline constexpr int kConfigurationFileSchemaVersion = 1;

struct ConfigurationFile {
  Configuration configuration;
  std::string model;       // "" when the file names none
  std::string input_spec;  // "" when none; "file:PATH" is not carried (inputs files stay local)
  std::string device;      // "" when none
  std::string source;      // where it came from, e.g. the journal (informational)
  std::string evidence;    // why, in words (informational)
  // What the tune measured besides (issue 84: serve hosts a tune's winner as it was measured):
  // its named dimensions (--dim NAME=DISTRIBUTION), the caller's module a Python API tune timed
  // (module.pt), and int8's calibration samples; each "" or empty when the tune had none.
  std::vector<std::string> dims;
  std::string python_module;
  std::string calibration_file;
  // The winner's figures as tuned, for whoever runs it to compare with: samples/s (and useful
  // tokens/s over a stream of lengths; 0 without), its 95% interval, the batch, the median
  // latency of one call (a batch; over a stream, a pass's median over its batches) and, over a
  // stream, the order its batches took the samples in (the batching knob). samples_per_s 0: not
  // known.
  struct Tuned {
    double samples_per_s = 0, low = 0, high = 0, tokens_per_s = 0, latency_p50_ms = 0;
    std::int64_t batch = 0;
    std::string batching;
  } tuned = {};
};

nlohmann::json to_json(const ConfigurationFile& file);
// Throws ConfigError naming the file for a missing or malformed file, or an unknown knob/value.
// A relative path in it (the model, the module, the calibration) that names a file beside it is
// read as beside it: a saved result folder travels whole.
ConfigurationFile read_configuration_file(const std::string& path);
// A --config argument names a file when it ends in ".json".
bool names_configuration_file(const std::string& argument);

}  // namespace torchperf

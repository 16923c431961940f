// A configuration saved as a JSON file: `report` writes the winner's, and `bench --config FILE`
// and the library (read_configuration_file) read it back, so a tuned setting travels as a file.
#pragma once

#include <string>

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
};

nlohmann::json to_json(const ConfigurationFile& file);
// Throws ConfigError naming the file for a missing or malformed file, or an unknown knob/value.
ConfigurationFile read_configuration_file(const std::string& path);
// A --config argument names a file when it ends in ".json".
bool names_configuration_file(const std::string& argument);

}  // namespace torchperf

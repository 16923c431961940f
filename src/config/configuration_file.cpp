#include "torchperf/config/configuration_file.h"

#include <fstream>

#include "torchperf/error.h"
#include "torchperf/json_fields.h"

namespace torchperf {

using json = nlohmann::json;

json to_json(const ConfigurationFile& f) {
  return {{"tool", "torchperf"},
          {"kind", "configuration"},
          {"schema_version", kConfigurationFileSchemaVersion},
          {"configuration", f.configuration.to_string()},
          {"model", f.model},
          {"input_spec", f.input_spec},
          {"device", f.device},
          {"source", f.source},
          {"evidence", f.evidence}};
}

ConfigurationFile read_configuration_file(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw ConfigError("no configuration file at '" + path +
                      "' (expected a JSON file written by torchperf report)");
  const json j = json::parse(in, nullptr, false);
  const auto field = [&](const char* key) {
    if (!j.contains(key)) return std::string();
    if (!j.at(key).is_string())
      throw ConfigError("configuration file '" + path + "': '" + key + "' must be a string");
    return j.at(key).get<std::string>();
  };
  if (j.is_discarded() || !j.is_object())
    throw ConfigError("configuration file '" + path + "' is not a JSON object");
  if (string_field(j, "kind") != "configuration" || !j.contains("configuration"))
    throw ConfigError("'" + path +
                      "' is not a torchperf configuration file (expected \"kind\": "
                      "\"configuration\" and a \"configuration\" string)");
  const int version = integer_field(j, "schema_version");
  if (version != kConfigurationFileSchemaVersion)
    throw ConfigError("configuration file '" + path + "' has schema version " +
                      std::to_string(version) + "; this torchperf reads " +
                      std::to_string(kConfigurationFileSchemaVersion));
  ConfigurationFile f;
  try {
    f.configuration = Configuration::parse(field("configuration"));
  } catch (const ConfigError& e) {
    throw ConfigError("configuration file '" + path + "': " + e.what());
  }
  f.model = field("model");
  f.input_spec = field("input_spec");
  f.device = field("device");
  f.source = field("source");
  f.evidence = field("evidence");
  return f;
}

bool names_configuration_file(const std::string& argument) {
  return argument.size() > 5 && argument.compare(argument.size() - 5, 5, ".json") == 0;
}

}  // namespace torchperf

#include "torchperf/config/configuration_file.h"

#include <filesystem>
#include <fstream>

#include "torchperf/error.h"
#include "torchperf/json_fields.h"

namespace torchperf {

using json = nlohmann::json;

json to_json(const ConfigurationFile& f) {
  json j = {{"tool", "torchperf"},
            {"kind", "configuration"},
            {"schema_version", kConfigurationFileSchemaVersion},
            {"configuration", f.configuration.to_string()},
            {"model", f.model},
            {"input_spec", f.input_spec},
            {"device", f.device},
            {"source", f.source},
            {"evidence", f.evidence}};
  // Only when there is something to say: a file of a plain tune reads as before.
  if (!f.dims.empty()) j["dims"] = f.dims;
  if (!f.python_module.empty()) j["python_module"] = f.python_module;
  if (!f.calibration_file.empty()) j["calibration_file"] = f.calibration_file;
  if (f.tuned.samples_per_s > 0)
    j["tuned"] = {{"samples_per_s", f.tuned.samples_per_s},
                  {"samples_per_s_low", f.tuned.low},
                  {"samples_per_s_high", f.tuned.high},
                  {"tokens_per_s", f.tuned.tokens_per_s},
                  {"latency_p50_ms", f.tuned.latency_p50_ms},
                  {"batch", f.tuned.batch},
                  {"batching", f.tuned.batching}};
  return j;
}

namespace {

// A relative path that names a file beside the configuration file is read as beside it.
std::string beside(const std::string& path, const std::string& file) {
  if (file.empty() || file.rfind("builtin:", 0) == 0 || std::filesystem::path(file).is_absolute())
    return file;
  const auto there = std::filesystem::path(path).parent_path() / file;
  std::error_code ec;
  return std::filesystem::exists(there, ec) ? there.string() : file;
}

}  // namespace

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
  f.model = beside(path, f.model);
  f.python_module = beside(path, field("python_module"));
  f.calibration_file = beside(path, field("calibration_file"));
  if (j.contains("dims")) {
    if (!j.at("dims").is_array())
      throw ConfigError("configuration file '" + path + "': 'dims' must be a list of strings");
    for (const auto& d : j.at("dims")) {
      if (!d.is_string())
        throw ConfigError("configuration file '" + path + "': 'dims' must be a list of strings");
      f.dims.push_back(d.get<std::string>());
    }
  }
  if (j.contains("tuned") && j.at("tuned").is_object()) {
    const json& t = j.at("tuned");
    const auto number = [&](const char* key) {
      const double v = t.contains(key) ? number_or_nan(t.at(key)) : 0.0;
      return std::isfinite(v) ? v : 0.0;
    };
    f.tuned.samples_per_s = number("samples_per_s");
    f.tuned.low = number("samples_per_s_low");
    f.tuned.high = number("samples_per_s_high");
    f.tuned.tokens_per_s = number("tokens_per_s");
    f.tuned.latency_p50_ms = number("latency_p50_ms");
    f.tuned.batch = integer_field(t, "batch");
    f.tuned.batching = string_field(t, "batching");
  }
  return f;
}

bool names_configuration_file(const std::string& argument) {
  return argument.size() > 5 && argument.compare(argument.size() - 5, 5, ".json") == 0;
}

}  // namespace torchperf

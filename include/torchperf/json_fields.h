// Reading and writing JSON fields the way every torchperf file does: non-finite numbers as null
// (JSON has no NaN), and fields of files that may be foreign looked at before they are read, so
// that a field of the wrong type is a clear refusal rather than a library exception. Header-only.
#pragma once

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

namespace torchperf {

// nlohmann::json's exception text without its "[json.exception.type_error.302] " tag: the part a
// user can act on ("type must be number, but is string").
inline std::string compact_json_error(const std::string& what) {
  if (what.rfind("[json.exception.", 0) == 0) {
    const auto end = what.find("] ");
    if (end != std::string::npos) return what.substr(end + 2);
  }
  return what;
}

// A number, or null when it is not finite.
inline nlohmann::json nullable(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

// A JSON number back as a double; null (or anything else) as NaN.
inline double number_or_nan(const nlohmann::json& value) {
  return value.is_number() ? value.get<double>() : NAN;
}

// The string at key, or fallback when j is not an object, has no such key, or holds another type.
inline std::string string_field(const nlohmann::json& j, const char* key,
                                const std::string& fallback = "") {
  return j.is_object() && j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>()
                                                                   : fallback;
}

// The integer at key, or fallback likewise.
inline int integer_field(const nlohmann::json& j, const char* key, int fallback = 0) {
  return j.is_object() && j.contains(key) && j.at(key).is_number_integer() ? j.at(key).get<int>()
                                                                           : fallback;
}

}  // namespace torchperf

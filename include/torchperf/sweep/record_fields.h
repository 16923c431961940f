// The one list of a tune point record's fields (llama-bench's get_fields(), google/benchmark's
// reporters): each field named once, with its type and meaning, and how it is written and read.
// The journal's JSON, report's CSV columns and docs/results-schema.md's tables all come from it.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/sweep/tune_runner.h"

namespace torchperf {

enum class FieldType {
  kString,
  kInteger,
  kNumber,
  kNumberOrNull,
  kInterval,
  kBoolean,
  kObjectOrNull
};
// As the docs' tables say it: "string", "number or null", "interval" ([low, high], ends null) …
std::string to_string(FieldType type);

template <typename Record>
struct RecordField {
  const char* name;
  FieldType type;
  const char* meaning;  // one line, for the docs
  std::function<nlohmann::json(const Record&)> write;
  // value is the field's JSON, or null when a journal written before the field lacks it.
  std::function<void(Record&, const nlohmann::json& value)> read;
};

// A point's own fields, in journal order. (The supervisor adds record, session, configuration,
// metrics and measurement around them.)
const std::vector<RecordField<PointResult>>& point_fields();
// The numbers a point is ranked and guarded on: the journal's "metrics" object.
const std::vector<RecordField<PointMetrics>>& point_metrics_fields();

// A record's fields written as one JSON object, and read back (a missing field reads as null).
template <typename Record>
nlohmann::json write_fields(const std::vector<RecordField<Record>>& fields, const Record& r) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& f : fields) j[f.name] = f.write(r);
  return j;
}
// Whether a field's JSON value is of its type (a number may be null: NaN is written as null).
bool holds_type(const nlohmann::json& value, FieldType type);

// A present field of the wrong type throws std::invalid_argument naming it, what was expected and
// what was found: a damaged record is said to be one, never read as a fallback value.
template <typename Record>
void read_fields(const std::vector<RecordField<Record>>& fields, const nlohmann::json& j,
                 Record& r) {
  if (!j.is_object()) throw std::invalid_argument("expected a JSON object, got " +
                                                  std::string(j.type_name()));
  for (const auto& f : fields) {
    const bool present = j.contains(f.name);
    if (present && !holds_type(j.at(f.name), f.type))
      throw std::invalid_argument("field '" + std::string(f.name) + "': expected " +
                                  to_string(f.type) + ", got " + j.at(f.name).dump());
    f.read(r, present ? j.at(f.name) : nlohmann::json());
  }
}

// The CSV columns of a field: its name, or NAME_low and NAME_high for an interval.
std::vector<std::string> csv_columns(const char* name, FieldType type);
// The CSV cells of a field's JSON value (numbers with 6 significant digits, integers exact,
// null empty, strings quoted when they must be).
std::vector<std::string> csv_cells(const nlohmann::json& value, FieldType type);
std::string csv_quoted(const std::string& text);

// A Markdown table (key, type, meaning) of the fields, as docs/results-schema.md holds it.
template <typename Record>
std::string fields_markdown(const std::vector<RecordField<Record>>& fields) {
  std::string out = "| key | type | meaning |\n| --- | --- | --- |\n";
  for (const auto& f : fields)
    out += "| `" + std::string(f.name) + "` | " + to_string(f.type) + " | " + f.meaning + " |\n";
  return out;
}

}  // namespace torchperf

#include "torchperf/report/points_csv.h"

#include <algorithm>

#include "torchperf/sweep/record_fields.h"

namespace torchperf {

// The columns are the journal's fields (sweep/record_fields.h), in its order and by its names,
// the metrics' flattened in place of their object, after the run, the model and one column per
// swept knob.
std::string points_csv(const std::vector<RunAnalysis>& runs) {
  std::vector<std::string> knobs;  // the union of the runs' axes, first seen first
  for (const auto& a : runs)
    for (const auto& [knob, values] : a.run.axes)
      if (std::find(knobs.begin(), knobs.end(), knob) == knobs.end()) knobs.push_back(knob);
  std::vector<std::string> header = {"run", "model", "key"};
  header.insert(header.end(), knobs.begin(), knobs.end());
  for (const auto& f : point_fields()) {
    if (std::string(f.name) == "key") continue;  // already first
    if (f.type == FieldType::kObjectOrNull) {
      for (const auto& m : point_metrics_fields())
        for (const auto& c : csv_columns(m.name, m.type)) header.push_back(c);
      continue;
    }
    for (const auto& c : csv_columns(f.name, f.type)) header.push_back(c);
  }
  std::string out;
  for (std::size_t i = 0; i < header.size(); ++i) out += (i ? "," : "") + header[i];
  out += "\n";
  for (const auto& a : runs) {
    for (const auto& p : a.run.points) {
      std::vector<std::string> row = {csv_quoted(a.run.label), csv_quoted(a.run.model),
                                      csv_quoted(p.key)};
      const auto values = key_knobs(p.key);
      for (const auto& k : knobs) {
        std::string v;
        for (const auto& [name, value] : values)
          if (name == k) v = value;
        row.push_back(csv_quoted(v));
      }
      for (const auto& f : point_fields()) {
        if (std::string(f.name) == "key") continue;
        if (f.type == FieldType::kObjectOrNull) {
          const bool has = p.status != PointStatus::kFailed;  // a failed point has no numbers
          for (const auto& m : point_metrics_fields())
            for (const auto& cell : csv_cells(has ? m.write(p.metrics) : nlohmann::json(), m.type))
              row.push_back(cell);
          continue;
        }
        for (const auto& cell : csv_cells(f.write(p), f.type)) row.push_back(cell);
      }
      for (std::size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + row[i];
      out += "\n";
    }
  }
  return out;
}

}  // namespace torchperf

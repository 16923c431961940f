#include "torchperf/analysis/run_results.h"

#include <filesystem>
#include <fstream>
#include <set>

#include "torchperf/error.h"
#include "torchperf/sweep/journal.h"
#include "torchperf/text.h"
#include "torchperf/json_fields.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string resolve_journal(const std::string& path) {
  if (!fs::exists(path))
    throw ResultsError("no results at '" + path +
                       "': expected a tune output directory or its results.jsonl");
  if (fs::is_directory(path)) {
    const fs::path file = fs::path(path) / "results.jsonl";
    if (!fs::exists(file))
      throw ResultsError("'" + path +
                         "' holds no results.jsonl: expected the --out directory of a tune run");
    return file.string();
  }
  return path;
}


// Names what a file is when it is not a journal, before the journal reader's generic refusal.
void refuse_foreign(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::string first;
  std::getline(in, first);
  const bool first_complete = !in.eof();  // the first line ended with a newline
  if (trim(first).empty() && in.peek() == std::char_traits<char>::eof())
    throw ResultsError("results file '" + file + "' is empty: expected the journal of a tune run");
  if (trim(first) == "{") {  // an indented JSON document: bench --json or tune --json output
    in.seekg(0);
    const json doc = json::parse(in, nullptr, false);
    const std::string kind = doc.is_object() ? string_field(doc, "kind") : "";
    if (kind == "bench" || kind == "tune")
      throw ResultsError("'" + file + "' is the output of torchperf " + kind +
                         " --json, not a tune journal: report reads OUT/results.jsonl");
    throw ResultsError("'" + file +
                       "' is a JSON document, not a tune journal (one JSON record per line)");
  }
  const json line = json::parse(first, nullptr, false);
  // A first line that is complete but not JSON is foreign; one cut short may be a killed write.
  if (line.is_discarded() && (first_complete || in.peek() != std::char_traits<char>::eof()))
    throw ResultsError("'" + file +
                       "' is not a tune journal: its first line is not JSON (expected "
                       "OUT/results.jsonl of torchperf tune)");
  if (!line.is_discarded() && (!line.is_object() || string_field(line, "record") != "header"))
    throw ResultsError("'" + file + "' is not a tune journal: its first line is not a header " +
                       "record (expected OUT/results.jsonl of torchperf tune)");
}


}  // namespace

std::vector<std::pair<std::string, std::string>> key_knobs(const std::string& key) {
  std::vector<std::pair<std::string, std::string>> knobs;
  if (key.empty()) return knobs;
  for (const auto& piece : split(key, ',')) {
    const auto eq = piece.find('=');
    if (eq == std::string::npos) continue;
    knobs.emplace_back(piece.substr(0, eq), piece.substr(eq + 1));
  }
  return knobs;
}

std::string knob_value(const std::string& key, const std::string& knob) {
  for (const auto& [k, v] : key_knobs(key))
    if (k == knob) return v;
  return "n/a";
}

RunResults load_run(const std::string& path) {
  RunResults run;
  run.journal = resolve_journal(path);
  refuse_foreign(run.journal);
  std::size_t truncated = 0;
  std::vector<json> records;
  records = Journal::read(run.journal, &truncated);
  const fs::path parent = fs::absolute(run.journal).parent_path();
  run.label = parent.filename().string();
  run.experiment = records.front().contains("experiment") && records.front().at("experiment").is_object()
                       ? records.front().at("experiment")
                       : json::object();
  run.model = string_field(run.experiment, "model");
  run.objective = string_field(run.experiment, "objective");
  run.accuracy = string_field(run.experiment, "accuracy");
  if (const auto pid = JournalLock::holder(parent.string())) {
    run.running_pid = *pid;
    run.warnings.push_back("the run is still going (tune PID " + std::to_string(*pid) +
                           " holds " + parent.string() + "): these are its results so far");
  }
  if (truncated && !run.running_pid)
    run.warnings.push_back("the journal's last line was cut short (a write interrupted) and is "
                           "ignored");
  std::set<std::string> seen;
  for (std::size_t i = 1; i < records.size(); ++i) {
    const json& r = records[i];
    const std::string kind = r.is_object() ? string_field(r, "record") : "";
    try {
      if (kind == "session") {
        ++run.sessions;
        run.environment = r.at("environment");
        const json& workload = r.at("workload");
        run.model = workload.at("model").get<std::string>();
        run.inputs = workload.at("inputs").get<std::string>();
        run.input_source = workload.value("input_source", "");
        run.axes.clear();
        for (const auto& axis : r.at("space").at("axes")) {
          const std::string text = axis.get<std::string>();
          const auto eq = text.find('=');
          if (eq == std::string::npos) throw std::invalid_argument("axis without '='");
          run.axes.emplace_back(text.substr(0, eq), split(text.substr(eq + 1), ','));
        }
      } else if (kind == "point") {
        if (r.at("status") != "failed" && !r.at("metrics").is_object())
          throw std::invalid_argument("a measured point without its metrics object");
        PointResult p = point_from_journal(r);
        p.resumed = false;
        if (seen.insert(p.key).second) {
          run.points.push_back(std::move(p));
        } else if (!p.brief) {
          // A smart search's finalist: its full measurement replaces the brief one.
          for (auto& q : run.points)
            if (q.key == p.key && q.brief) q = p;
        }
      } else if (kind == "head_to_head") {
        run.comparisons.push_back(head_to_head_from_journal(r));
      } else if (kind == "package") {
        run.packages[r.at("options").get<std::string>()] = r;
      } else if (kind == "summary") {
        run.summary = r;
        run.origin = r.at("space").value("origin", "");
      }
    } catch (const json::exception& e) {
      throw ResultsError("results file '" + run.journal + "' line " + std::to_string(i + 1) +
                         ": a " + kind + " record not of schema version " +
                         std::to_string(kJournalSchemaVersion) + " (" +
                         compact_json_error(e.what()) + ")");
    } catch (const std::invalid_argument& e) {
      throw ResultsError("results file '" + run.journal + "' line " + std::to_string(i + 1) +
                         ": a " + kind + " record not of schema version " +
                         std::to_string(kJournalSchemaVersion) + " (" + e.what() + ")");
    }
  }
  if (run.sessions == 0)
    throw ResultsError("results file '" + run.journal +
                       "' has a header but no session: the run stopped before it began");
  if (!run.summary)
    run.warnings.push_back(
        "the sweep did not complete (no summary record): no winner was confirmed head to head");
  // A busy machine is said where the run is read, the report's first lines included.
  if (run.summary && run.summary->contains("notes") && run.summary->at("notes").is_array())
    for (const auto& note : run.summary->at("notes"))
      if (note.is_string() && note.get<std::string>().rfind("a busy machine", 0) == 0)
        run.warnings.push_back(note.get<std::string>());
  if (run.origin.empty())
    for (const auto& p : run.points)
      if (p.changes == 0) {
        run.origin = p.key;
        break;
      }
  return run;
}

}  // namespace torchperf

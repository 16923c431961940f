// What compiling costs for one model, as tune has seen it: each compile keyed by the runtime that
// paid it and its artefact (Runtime::artefact: a package's options, a torch.compile mode), and
// for a compile inside a point's worker, the point. Kept in torchperf's cache beside the packages
// (costs/FINGERPRINT.jsonl), so a later tune of the same model predicts a compile before it pays.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace torchperf {

struct CompileId {
  CompileId(std::string runtime_name, std::string artefact_name, std::string point_key = "")
      : runtime(std::move(runtime_name)),
        artefact(std::move(artefact_name)),
        point(std::move(point_key)) {}
  std::string runtime;   // Runtime::name()
  std::string artefact;  // Artefact::name
  std::string point;     // the point's key, for a compile its own worker paid ("" for a package)
  // Its line's "what" in the file: RUNTIME:ARTEFACT[:POINT].
  std::string key() const;
};

class CompileCosts {
 public:
  CompileCosts() = default;  // remembers this tune's only
  // Reads what earlier tunes recorded there (a damaged line is skipped: it is only a prediction)
  // and appends what this one records.
  explicit CompileCosts(std::string path);

  void record(const CompileId& id, double seconds);
  // The latest cost recorded for exactly this compile.
  std::optional<double> seen(const CompileId& id) const;
  // The longest recorded for a runtime's artefact (any point), or with artefact "" for any of the
  // runtime's.
  std::optional<double> longest(const std::string& runtime, const std::string& artefact = "") const;
  // How many compiles of a runtime are recorded, and how many of those came from earlier tunes.
  std::size_t count(const std::string& runtime) const;
  std::size_t remembered(const std::string& runtime) const;

 private:
  std::string path_;
  std::map<std::string, double> latest_;
  std::map<std::string, bool> from_file_;
};

// The file for a model: torchperf_cache_dir()/costs/ and the model's content fingerprint.
std::string compile_costs_path(const std::string& model_path);

}  // namespace torchperf

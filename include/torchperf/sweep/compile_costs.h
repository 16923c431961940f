// What compiling costs for one model, as tune has seen it: AOTInductor packages by their options,
// torch.compile points by their graph mode and key. Kept in torchperf's cache beside the packages
// (costs/FINGERPRINT.jsonl), so a later tune of the same model predicts a compile before it pays.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

namespace torchperf {

class CompileCosts {
 public:
  CompileCosts() = default;  // remembers this tune's only
  // Reads what earlier tunes recorded there (a damaged line is skipped: it is only a prediction)
  // and appends what this one records.
  explicit CompileCosts(std::string path);

  // "aoti:precision=fp32,max_autotune=0,device=cpu" or "compile:GRAPH:KEY".
  void record(const std::string& what, double seconds);
  // The latest cost recorded for `what`.
  std::optional<double> seen(const std::string& what) const;
  // The longest recorded for a name that begins with `prefix`, and how many there are.
  std::optional<double> longest(const std::string& prefix) const;
  std::size_t count(const std::string& prefix) const;
  // How many of those came from earlier tunes (read from the file).
  std::size_t remembered(const std::string& prefix) const;

 private:
  std::string path_;
  std::map<std::string, double> latest_;
  std::map<std::string, bool> from_file_;
};

// The file for a model: torchperf_cache_dir()/costs/ and the model's content fingerprint.
std::string compile_costs_path(const std::string& model_path);

}  // namespace torchperf

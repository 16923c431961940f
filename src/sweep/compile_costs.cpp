#include "torchperf/sweep/compile_costs.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "torchperf/models/aoti_package.h"

namespace torchperf {

namespace fs = std::filesystem;

CompileCosts::CompileCosts(std::string path) : path_(std::move(path)) {
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("what") || !j["what"].is_string() ||
        !j.contains("compile_s") || !j["compile_s"].is_number())
      continue;
    latest_[j["what"].get<std::string>()] = j["compile_s"].get<double>();
    from_file_[j["what"].get<std::string>()] = true;
  }
}

void CompileCosts::record(const std::string& what, double seconds) {
  latest_[what] = seconds;
  from_file_[what] = false;
  if (path_.empty()) return;
  std::error_code ec;
  fs::create_directories(fs::path(path_).parent_path(), ec);
  // One short line per compile, appended: concurrent tunes of one model interleave whole lines.
  std::ofstream out(path_, std::ios::app);
  out << nlohmann::json{{"what", what}, {"compile_s", seconds}}.dump() << '\n';
}

std::optional<double> CompileCosts::seen(const std::string& what) const {
  const auto it = latest_.find(what);
  if (it == latest_.end()) return std::nullopt;
  return it->second;
}

std::optional<double> CompileCosts::longest(const std::string& prefix) const {
  std::optional<double> most;
  for (auto it = latest_.lower_bound(prefix); it != latest_.end() && it->first.rfind(prefix, 0) == 0;
       ++it)
    if (!most || it->second > *most) most = it->second;
  return most;
}

std::size_t CompileCosts::count(const std::string& prefix) const {
  std::size_t n = 0;
  for (auto it = latest_.lower_bound(prefix); it != latest_.end() && it->first.rfind(prefix, 0) == 0;
       ++it)
    ++n;
  return n;
}

std::size_t CompileCosts::remembered(const std::string& prefix) const {
  std::size_t n = 0;
  for (auto it = from_file_.lower_bound(prefix);
       it != from_file_.end() && it->first.rfind(prefix, 0) == 0; ++it)
    n += it->second;
  return n;
}

std::string compile_costs_path(const std::string& model_path) {
  return (fs::path(torchperf_cache_dir()) / "costs" /
          (archive_fingerprint(model_path).substr(0, 16) + ".jsonl"))
      .string();
}

}  // namespace torchperf

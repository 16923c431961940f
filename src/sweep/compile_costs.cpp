#include "torchperf/sweep/compile_costs.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "torchperf/models/aoti_package.h"

namespace torchperf {

namespace fs = std::filesystem;

namespace {
constexpr const char* kOldCompileKey = "compile:";
}  // namespace

CompileCosts::CompileCosts(std::string path) : path_(std::move(path)) {
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("what") || !j["what"].is_string() ||
        !j.contains("compile_s") || !j["compile_s"].is_number())
      continue;
    std::string what = j["what"].get<std::string>();
    // Files written before compiles were keyed by runtime named torch.compile's "compile:GRAPH:KEY".
    if (what.rfind(kOldCompileKey, 0) == 0) what = "python-compile:" + what.substr(8);
    latest_[what] = j["compile_s"].get<double>();
    from_file_[what] = true;
  }
}

namespace {

// The keys that begin with prefix: a runtime's ("aoti:"), or one artefact's ("aoti:NAME:" and
// the artefact itself, "aoti:NAME").
template <typename Map, typename F>
void each_under(const Map& map, const std::string& prefix, const std::string& exact, F f) {
  for (auto it = map.lower_bound(prefix); it != map.end() && it->first.rfind(prefix, 0) == 0; ++it)
    f(it->second);
  if (!exact.empty())
    if (const auto it = map.find(exact); it != map.end()) f(it->second);
}

}  // namespace

std::string CompileId::key() const {
  return runtime + ":" + artefact + (point.empty() ? "" : ":" + point);
}

void CompileCosts::record(const CompileId& id, double seconds) {
  const std::string what = id.key();
  latest_[what] = seconds;
  from_file_[what] = false;
  if (path_.empty()) return;
  std::error_code ec;
  fs::create_directories(fs::path(path_).parent_path(), ec);
  // One short line per compile, appended: concurrent tunes of one model interleave whole lines.
  std::ofstream out(path_, std::ios::app);
  out << nlohmann::json{{"what", what}, {"compile_s", seconds}}.dump() << '\n';
}

std::optional<double> CompileCosts::seen(const CompileId& id) const {
  const auto it = latest_.find(id.key());
  if (it == latest_.end()) return std::nullopt;
  return it->second;
}

std::optional<double> CompileCosts::longest(const std::string& runtime,
                                            const std::string& artefact) const {
  std::optional<double> most;
  const std::string prefix = runtime + ":" + (artefact.empty() ? "" : artefact + ":");
  each_under(latest_, prefix, artefact.empty() ? "" : runtime + ":" + artefact, [&](double s) {
    if (!most || s > *most) most = s;
  });
  return most;
}

std::size_t CompileCosts::count(const std::string& runtime) const {
  std::size_t n = 0;
  each_under(latest_, runtime + ":", "", [&](double) { ++n; });
  return n;
}

std::size_t CompileCosts::remembered(const std::string& runtime) const {
  std::size_t n = 0;
  each_under(from_file_, runtime + ":", "", [&](bool from_file) { n += from_file; });
  return n;
}

std::string compile_costs_path(const std::string& model_path) {
  return (fs::path(torchperf_cache_dir()) / "costs" /
          (archive_fingerprint(model_path).substr(0, 16) + ".jsonl"))
      .string();
}

}  // namespace torchperf

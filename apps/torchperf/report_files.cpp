#include "report_files.h"

#include <cctype>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "torchperf/analysis/run_analysis.h"
#include "torchperf/error.h"
#include "torchperf/report/apply_snippets.h"
#include "torchperf/report/html_report.h"

namespace torchperf::cli {

void write_text_file(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  std::error_code ec;
  const auto fail = [&](const std::string& why) {
    std::filesystem::remove(temporary, ec);  // leave nothing half-written behind
    throw RuntimeFailure("cannot write '" + path + "'" + why);
  };
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) fail("");
    out << text;
    if (!out.flush()) fail("");
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) fail(": " + ec.message());
}

std::string write_run_report(const std::string& out_dir) {
  const RunAnalysis analysis = analyze(load_run(out_dir));
  const std::string page = out_dir + "/report.html";
  write_text_file(page, render_html({analysis}));
  if (analysis.winner)
    write_text_file(out_dir + "/winner.json", make_apply_snippets(analysis).config_json + "\n");
  return page;
}

std::string default_out_dir(const std::string& model) {
  std::string stem = model.rfind("builtin:", 0) == 0 ? model.substr(8)
                                                     : std::filesystem::path(model).stem().string();
  for (auto& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '-';
  char stamp[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&t));
  return "torchperf-runs/" + stem + "-" + stamp;
}

}  // namespace torchperf::cli

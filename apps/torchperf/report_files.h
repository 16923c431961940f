// Writing the report's files from the CLI (report and tune share it).
#pragma once

#include <string>

namespace torchperf::cli {

// Writes text to path (through a temporary file renamed into place, so that a reader never sees a
// half-written page); RuntimeFailure naming the path when it cannot.
void write_text_file(const std::string& path, const std::string& text);

// tune's last step: OUT/report.html and, with a winner, OUT/winner.json. Returns the page's path.
std::string write_run_report(const std::string& out_dir);

// torchperf-runs/STEM-TIME, a run's folder when --out is not given: STEM is the model file's stem
// (a builtin's name; a folder's own name for hf:PATH).
std::string default_out_dir(const std::string& model);

}  // namespace torchperf::cli

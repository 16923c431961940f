// What serve-tune shows and saves: the table of candidates (predicted and measured best rates,
// p99 measured beside the queueing model's), the JSON of every trial, and an HTML page with
// latency against offered load per candidate and the winner's batch sizes.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "torchperf/report/analysis_text.h"
#include "torchperf/serve/serve_tune.h"

namespace torchperf {

TextTable serve_tune_table(const ServeTuneResult& result, const ServeTuneOptions& options);
// The winner against one request per forward, in words ("" when either is missing).
std::string serve_tune_verdict(const ServeTuneResult& result);
nlohmann::json to_json(const ServeTuneResult& result, const ServeTuneOptions& options);
// One row per load run: candidate, rate, verdict, measured and predicted quantile.
std::string serve_tune_csv(const ServeTuneResult& result, const ServeTuneOptions& options);
std::string serve_tune_html(const ServeTuneResult& result, const ServeTuneOptions& options,
                            const std::string& model);

}  // namespace torchperf

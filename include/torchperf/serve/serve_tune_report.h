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
// The winner against one request per forward, in words ("" without a winner); with expected
// requests, its rate over them with its start-up; and the break-even count between the fastest
// candidate and the one ready soonest, where they differ.
std::string serve_tune_verdict(const ServeTuneResult& result, const ServeTuneOptions& options);
// "break-even: ..." in words, "" where the fastest is also ready soonest (or either is missing).
std::string serve_tune_break_even(const ServeTuneResult& result);
nlohmann::json to_json(const ServeTuneResult& result, const ServeTuneOptions& options);
// One row per load run: candidate, rate, verdict, measured and predicted quantile.
std::string serve_tune_csv(const ServeTuneResult& result, const ServeTuneOptions& options);
std::string serve_tune_html(const ServeTuneResult& result, const ServeTuneOptions& options,
                            const std::string& model);

}  // namespace torchperf

// What `train` shows: the breakdown table, the advice, the ladder table (as the guide's table of
// steps), the same as JSON, and an HTML page with the step time stacked by phase per
// configuration (report's page and plotting libraries).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/report/analysis_text.h"
#include "torchperf/report/vega_specs.h"
#include "torchperf/train/advice.h"
#include "torchperf/train/ladder.h"
#include "torchperf/train/step_breakdown.h"

namespace torchperf {

struct TrainReport {
  std::string model, data, device, loss, optimizer;
  std::string configuration;  // the resolved training knobs
  std::vector<std::string> notes;
  Breakdown breakdown;        // of the configuration as given (without --ladder)
  std::vector<Advice> advice;
  std::optional<LadderResult> ladder;
};

TextTable breakdown_table(const Breakdown& b);
// DDP: each rank's phases, step, own work and peak memory.
TextTable ranks_table(const Breakdown& b);
TextTable ladder_table(const LadderResult& ladder);
std::string format_train_report(const TrainReport& report);
nlohmann::json to_json(const Breakdown& b);
nlohmann::json to_json(const TrainReport& report);
// The stacked bar: one bar per configuration (the ladder's rungs, or the one run), ms per phase.
Panel breakdown_panel(const TrainReport& report);
std::string render_train_html(const TrainReport& report);

}  // namespace torchperf

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "exit_codes.h"
#include "torchperf/bench/measurement_parts.h"
#include "torchperf/sweep/objective.h"

// `torchperf guard`: saved outputs judged against a saved reference with tune's accuracy guard,
// so that a caller outside tune (the Python API's apply) passes or fails an output by the same
// definition a sweep's point does.

namespace torchperf::cli {

Runner add_guard_command(CLI::App& app) {
  struct Flags {
    std::string reference, outputs, accuracy;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "guard", "Judge saved outputs against a saved reference with tune's accuracy guard");
  cmd->add_option("reference", f->reference,
                  "The reference outputs: torch.save((tensors, flops)) or a list of tensors")
      ->required();
  cmd->add_option("outputs", f->outputs, "The outputs to judge, saved the same way")->required();
  cmd->add_option("--accuracy", f->accuracy,
                  "The guard, as for tune: 'cosine>=0.999,top1>=99%' (default), 'max_abs<=1e-3'");
  cmd->add_flag("--json", f->json, "Print the verdict and the metrics as JSON");
  return [cmd, f]() -> int {
    if (!cmd->parsed()) return -1;
    const AccuracyGuard guard =
        f->accuracy.empty() ? AccuracyGuard::default_guard() : AccuracyGuard::parse(f->accuracy);
    const SavedOutputs reference = load_saved_outputs(f->reference);
    const SavedOutputs outputs = load_saved_outputs(f->outputs);
    Measurement m;
    add_output_check(m, reference.outputs, outputs.outputs);
    PointMetrics metrics = quality_metrics(m.quality);
    metrics.valid = m.valid;
    metrics.invalid_reason = m.invalid_reason;
    const std::optional<std::string> why = guard.check(metrics);
    if (f->json) {
      std::cout << nlohmann::json{{"passes", !why},
                                  {"why", why.value_or("")},
                                  {"accuracy", guard.to_string()},
                                  {"comparable", metrics.comparable},
                                  {"cosine", metrics.cosine},
                                  {"max_abs_error", metrics.max_abs_error},
                                  {"max_rel_error", metrics.max_rel_error},
                                  {"top1_agreement", metrics.top1
                                                         ? nlohmann::json(*metrics.top1)
                                                         : nlohmann::json(nullptr)}}
                       .dump(2)
                << "\n";
    } else {
      std::cout << fmt::format("{}: cosine {:.6f}, max abs err {:.3g}{} ({})\n",
                               why ? "FAILS" : "passes", metrics.cosine, metrics.max_abs_error,
                               metrics.top1 ? fmt::format(", top-1 {:.1f}%", 100 * *metrics.top1)
                                            : std::string(),
                               why ? *why : guard.to_string());
    }
    return why ? kInvalidResult : kSuccess;
  };
}

}  // namespace torchperf::cli

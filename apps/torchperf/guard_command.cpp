#include <fmt/format.h>

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "exit_codes.h"
#include "torchperf/bench/measurement_parts.h"
#include "torchperf/error.h"
#include "torchperf/json_fields.h"
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
                  "The guard, as for tune: 'cosine>=0.999,top1>=99%,max_rel<=10%' (default), "
                  "'max_abs<=1e-3'");
  cmd->add_flag("--json", f->json, "Print the verdict and the metrics as JSON");
  return [cmd, f]() -> int {
    if (!cmd->parsed()) return -1;
    const AccuracyGuard guard =
        f->accuracy.empty() ? AccuracyGuard::default_guard() : AccuracyGuard::parse(f->accuracy);
    // Each file is the user's input, named by its role: a file that is no saved outputs is a
    // model-or-inputs error (exit 4), never a failure of the run.
    const auto load = [](const std::string& path, const std::string& role) {
      try {
        return load_saved_outputs(path, role);
      } catch (const RuntimeFailure& e) {
        throw ModelError(e.what());
      }
    };
    const SavedOutputs reference = load(f->reference, "reference file");
    const SavedOutputs outputs = load(f->outputs, "outputs file");
    Measurement m;
    add_output_check(m, reference.outputs, outputs.outputs);
    PointMetrics metrics = quality_metrics(m.quality);
    metrics.valid = m.valid;
    metrics.invalid_reason = m.invalid_reason;
    std::optional<std::string> why = guard.check(metrics);
    // Outputs of another count or shape have no cosine or error: say what differs instead.
    // (A guard of `none` accepts them; an INVALID output keeps its own reason.)
    const std::string differs = "the outputs cannot be compared with the reference: " + m.quality.note;
    if (why && metrics.valid && !metrics.comparable) why = differs;
    const auto number = [&](double v) {
      return metrics.comparable ? nullable(v) : nlohmann::json(nullptr);
    };
    if (f->json) {
      std::cout << nlohmann::json{{"passes", !why},
                                  {"why", why.value_or("")},
                                  {"accuracy", guard.to_string()},
                                  {"comparable", metrics.comparable},
                                  {"cosine", number(metrics.cosine)},
                                  {"max_abs_error", number(metrics.max_abs_error)},
                                  {"max_rel_error", number(metrics.max_rel_error)},
                                  {"top1_agreement", metrics.top1 && metrics.comparable
                                                         ? nlohmann::json(*metrics.top1)
                                                         : nlohmann::json(nullptr)}}
                       .dump(2)
                << "\n";
    } else if (!metrics.comparable) {
      std::cout << (why ? "FAILS: " + *why : "passes (" + guard.to_string() + "): " + differs)
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

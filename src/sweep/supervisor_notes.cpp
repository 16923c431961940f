// The supervisor's notes on the budget, the machine and the data: what other work took of the
// cores, a budget too small for the space or left unspent, what int8 was calibrated on, each
// said in one line with why.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "supervisor.h"
#include "torchperf/feed/inputs.h"
#include "torchperf/sweep/tune_plan.h"

namespace torchperf {

// What other work took of the cores, in the words the plan, the summary and the report share.
std::string Supervisor::busy_text(const MachineLoad& load, bool before_sweep) const {
  const int usable = desc_.traits.usable_cores;
  const std::string when =
      before_sweep ? fmt::format("{:.1f} of {} core(s) busy with other work before the sweep",
                                 load.before().value_or(0), usable)
                   : fmt::format("other work kept {:.1f} of {} core(s) busy before the sweep and "
                                 "{:.1f} (median; up to {:.1f}) during it",
                                 load.before().value_or(0), usable, load.during_median(),
                                 load.during_max());
  // Before the sweep, what the crowning will do; after it, the crowning's own note says what it
  // did (issue 63: "no point above the 1 free core is crowned" above a threads=2 winner, where
  // every point that passed had 2).
  if (!before_sweep)
    return fmt::format("a busy machine: {}; figures are slower and noisier than on a quiet one",
                       when);
  return fmt::format("a busy machine: {}; figures are slower and noisier than on a quiet one, and "
                     "no point with more threads than the {} core(s) left free is crowned while "
                     "another point passed",
                     when, load.free_cores(usable));
}

void Supervisor::note_machine_load() {
  const MachineLoad* load = runner_ ? runner_->machine_load() : nullptr;
  if (!load || (!load->before() && load->during().empty())) return;
  MachineLoadRecord& m = result_.machine_load;
  m.sampled = true;
  m.before_cores = load->before().value_or(NAN);
  m.during_median_cores = load->during_median();
  m.during_max_cores = load->during_max();
  m.busy = load->busy();
  m.usable_cores = desc_.traits.usable_cores;
  m.free_cores = load->free_cores(desc_.traits.usable_cores);
  if (m.busy) result_.notes.push_back(busy_text(*load, false));
}

// The plan's note was written from guesses; this one from what the points took, when the budget
// could not pay for the screens, a few guesses, the finals and the confirmation.
void Supervisor::note_budget_after_sweep(double sweep_start_s) {
  std::size_t unmeasured = 0;
  for (const auto& p : space_.points) unmeasured += !finished_.count(p.key);
  result_.budget_exhausted = search_->cut_by_budget();
  result_.not_run = result_.budget_exhausted ? unmeasured : 0;
  const double brief = budget_.point_estimate_s(true), full = budget_.point_estimate_s(false);
  const std::size_t screen = std::min(space_.points.size(), 2 * origin_screen_points());
  const std::size_t explore = std::max<std::size_t>(4, space_.axes.size());
  const double needs = sweep_start_s + static_cast<double>(screen + explore) * brief +
                       static_cast<double>(finalist_count()) * full +
                       budget_.confirmation_reserve_s();
  if (!result_.budget_exhausted || o_.search != SearchKind::kSmart || !budget_.measured_brief() ||
      needs <= o_.budget_s)
    return;
  const std::string plan_note = result_.plan.budget_note;
  result_.plan.budget_too_small = true;
  result_.plan.budget_note = fmt::format(
      "the budget of {} is too small for this space: points took ~{:.1f} s briefly and "
      "~{:.1f} s in full (measured), and {} of {} points were left unmeasured ({}); screening "
      "the one-knob changes around the origin and the expert start, {} guesses and {} "
      "finalists need about {:.0f} min: raise --budget or pin knobs with --space",
      budget_words(o_.budget_s), brief, full, unmeasured, space_.points.size(), search_->spent(), explore,
      finalist_count(), needs / 60);
  // It replaces the plan's note, which was written from guesses.
  result_.notes.erase(std::remove(result_.notes.begin(), result_.notes.end(), plan_note),
                      result_.notes.end());
  result_.notes.push_back(result_.plan.budget_note);
}

void Supervisor::note_unspent_budget(double confirm_start_s) {
  if (!budget_.limited() || interrupted_) return;
  const double left = budget_.wall_left_s();
  if (left <= std::max(10.0, 0.05 * o_.budget_s)) return;
  std::size_t unmeasured = 0;
  for (const auto& p : space_.points) unmeasured += !finished_.count(p.key);
  std::string why;
  if (unmeasured == 0)
    why = "every point of the space was measured";
  else if (search_->cut_by_budget())
    why = fmt::format("the sweep stopped when the next point (~{:.0f} s) no longer fitted beside "
                      "the {:.0f} s held for the confirmation, which took {:.0f} s",
                      budget_.point_estimate_s(o_.search == SearchKind::kSmart),
                      budget_.held_back_s(), budget_.elapsed_s() - confirm_start_s);
  else
    why = fmt::format("the search stopped on its own ({}; {} point(s) unmeasured that its fitted "
                      "model did not expect to beat the best)",
                      search_->spent(), unmeasured);
  result_.notes.push_back(fmt::format("{} of the budget of {} were left unspent: {}",
                                      budget_words(left), budget_words(o_.budget_s), why));
}

void Supervisor::notes_after_confirmation(double confirm_start_s) {
  note_unspent_budget(confirm_start_s);
  note_machine_load();
  note_calibration();
}

// int8-static's scales are what its calibration saw (python/torchperf/int8.py calibrates each
// point on its own inputs): named, and random inputs said as such.
void Supervisor::note_calibration() {
  const bool calibrated = std::any_of(finished_.begin(), finished_.end(), [](const auto& p) {
    return p.first.find("precision=int8-static") != std::string::npos &&
           (p.second.status == PointStatus::kOk || p.second.status == PointStatus::kGuarded);
  });
  const BenchOptions& w = o_.workload;
  if (!calibrated) {
    if (!w.calibration_file.empty())
      result_.notes.push_back("--calibration " + w.calibration_file + " was not used: no "
                              "precision=int8-static point was measured (it calibrates only "
                              "int8-static, in runtime=python, onnxruntime or openvino on a CPU)");
    return;
  }
  if (!w.calibration_file.empty()) {
    const std::int64_t samples = calibration_samples(w.calibration_file);
    result_.notes.push_back(fmt::format(
        "precision=int8-static was calibrated on {} of {} (--calibration), in each point's "
        "batches; its accuracy guard ran on the points' own inputs",
        samples > 0 ? "the " + std::to_string(samples) + " samples" : "the samples",
        w.calibration_file));
    return;
  }
  result_.notes.push_back(
      w.inputs_file.empty()
          ? fmt::format("precision=int8-static was calibrated on random inputs drawn from the "
                        "input spec ({}), and its accuracy guard ran on them too: its scales fit "
                        "random data; calibrate on real samples (--calibration FILE; from Python, "
                        "calibration=TENSORS) before using an int8 winner",
                        w.input_spec.empty() ? "the model's default" : w.input_spec)
          : fmt::format("precision=int8-static was calibrated on the samples of {} (each "
                        "point's batch of them, and its stream's)",
                        w.inputs_file));
}

}  // namespace torchperf

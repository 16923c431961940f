// Advice from a step-time breakdown, in the manner of the PyTorch profiler's removed TensorBoard
// overview and of the guides: each rule has a threshold, fires with its evidence, and names the
// knob change that addresses it (which the ladder then tries). Torch-free.
#pragma once

#include <string>
#include <vector>

#include "torchperf/config/training_plan.h"
#include "torchperf/train/step_breakdown.h"

namespace torchperf {

struct AdviceContext {
  TrainingPlan plan;
  bool cuda = false;
  bool convolutional = false;
  bool torchscript = false;  // the executor knob applies
  bool uint8_data = false;  // the transfer knob applies
  int usable_cores = 1;
  bool reduced_precision_hardware = false;
  std::string reduced_precision_evidence;
};

struct Advice {
  std::string rule;       // "data-wait", "copy", "reduced-precision", "memory", "utilisation" …
  std::string message;    // what to do, in words
  std::string evidence;   // the measured figures and the threshold they crossed
  std::string knob;       // the change to try, or "" when no knob does it (checkpointing)
  std::string value;
  bool changes_training = false;  // batch size, precision
  double weight = 0;              // the share of step time the rule addresses (for ordering)
};

// Rules that fire, the largest share of step time first.
std::vector<Advice> advise(const Breakdown& breakdown, const AdviceContext& context);

// Thresholds, named once (docs/methodology.md lists them).
inline constexpr double kDataWaitThreshold = 0.05;   // of the step: the loader cannot keep up
// With workers=0 every batch is made in the training thread, and one loader thread takes that
// work off the step's critical path: worth a head-to-head from a smaller share.
inline constexpr double kInlineDataWaitThreshold = 0.02;
inline constexpr double kCopyThreshold = 0.05;       // of the step: host-to-device copies
inline constexpr double kMemoryHighThreshold = 0.90;  // of capacity: no room to grow
inline constexpr double kMemoryLowThreshold = 0.50;   // of capacity: room for a bigger batch
inline constexpr double kUtilisationThreshold = 0.90;  // compute share below which batch helps
inline constexpr double kOptimizerThreshold = 0.05;    // of the step: zero_grad + step

}  // namespace torchperf

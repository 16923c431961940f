// What `train` and `trace` advise, in one vocabulary: a rule that fired, what to do, the evidence
// (the measured figures and the threshold they crossed) and the knob change that addresses it;
// the thresholds both sides judge by; and the table both print. Below train and trace, and
// torch-free, so that `trace` links no LibTorch. (train/advice.h applies the rules to a measured
// step, trace/trace_advice.h to a profiler trace.)
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "torchperf/page/text_table.h"

namespace torchperf {

struct Advice {
  Advice() = default;
  Advice(std::string rule_, std::string message_, std::string evidence_, std::string knob_,
         std::string value_, bool changes_training_, double weight_)
      : rule(std::move(rule_)),
        message(std::move(message_)),
        evidence(std::move(evidence_)),
        knob(std::move(knob_)),
        value(std::move(value_)),
        changes_training(changes_training_),
        weight(weight_) {}
  std::string rule;       // "data-wait", "copy", "reduced-precision", "memory", "utilisation" …
  std::string message;    // what to do, in words
  std::string evidence;   // the measured figures and the threshold they crossed
  std::string knob;       // the change to try, or "" when no knob does it (checkpointing)
  std::string value;
  bool changes_training = false;  // batch size, precision
  double weight = 0;              // the share of step time the rule addresses (for ordering)
  // A count sized to the machine: after `value`, these larger values in order, each tried while
  // it gains more than the one before (loader workers 1, 2, 4, … up to the usable cores).
  std::vector<std::string> larger;
  // Knobs set together with this one (pin_memory=on is little use without non_blocking=on).
  std::vector<std::pair<std::string, std::string>> with;
};

// The change an advice proposes, as a configuration fragment: "pin_memory=on,non_blocking=on"
// (value: one of its sizes instead of its first).
std::string change_of(const Advice& advice, const std::string& value = "");

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
inline constexpr double kAllReduceThreshold = 0.05;    // of the step: DDP's exposed all-reduce
inline constexpr double kStragglerThreshold = 0.10;    // of the step: the slowest rank's lag

// rule, advice, the knob change to try (* when it changes training), evidence.
TextTable advice_table(const std::vector<Advice>& advice);

}  // namespace torchperf

#include "training_scale_knobs.h"

#include <string>

#include "process_knobs.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

// DDP's knobs apply where ranks run: a model trained in one process has nothing to all-reduce.
Applicability with_ranks(const WorkloadTraits& t) {
  return t.world_size > 1 ? Applicability::yes()
                          : Applicability::no("DDP's settings apply to ranks (train --nproc N, or "
                                              "--nnodes)");
}

Knob on_off_ddp(const std::string& name, const std::string& description, bool baseline,
                void (*set)(bool, TrainingPlan&)) {
  Knob k = training_only(name, description);
  k.values = [](const WorkloadTraits&) { return fixed({"off", "on"}); };
  k.baseline = [baseline](const WorkloadTraits&) { return baseline ? "on" : "off"; };
  k.applies = [](const WorkloadTraits& t, const std::string&) { return with_ranks(t); };
  k.plan = [set](const std::string& value, TrainingPlan& p) { set(value == "on", p); };
  return k;
}

Knob accumulate_knob() {
  Knob k = training_only("accumulate",
                         "micro-batches per optimizer step (gradient accumulation): the step "
                         "learns from accumulate x batch samples per rank");
  k.changes_training = true;
  k.integer_valued = true;
  k.values = [](const WorkloadTraits&) { return fixed({"1", "2", "4"}); };
  k.baseline = [](const WorkloadTraits&) { return "1"; };
  k.applies = [](const WorkloadTraits&, const std::string& value) {
    return std::stol(value) <= 1024 ? Applicability::yes()
                                    : Applicability::no("more than 1024 micro-batches per step");
  };
  k.plan = [](const std::string& value, TrainingPlan& p) { p.accumulate = std::stoi(value); };
  return k;
}

Knob bucket_knob() {
  Knob k = training_only("ddp_bucket_mb",
                         "DDP's bucket size in MB (bucket_cap_mb): gradients are all-reduced a "
                         "bucket at a time, overlapping with the rest of backward");
  k.integer_valued = true;
  k.values = [](const WorkloadTraits&) { return fixed({"5", "25", "100"}); };
  k.baseline = [](const WorkloadTraits&) { return "25"; };
  k.applies = [](const WorkloadTraits& t, const std::string& value) {
    if (std::stol(value) > 4096) return Applicability::no("buckets over 4096 MB");
    return with_ranks(t);
  };
  k.plan = [](const std::string& value, TrainingPlan& p) { p.ddp.bucket_mb = std::stoll(value); };
  return k;
}

Knob find_unused_knob() {
  Knob k = training_only("find_unused_parameters",
                         "DDP walks the graph each step for parameters without a gradient: auto "
                         "turns it on only where a step leaves some (found on the first batch); "
                         "on where none are is a cost");
  k.values = [](const WorkloadTraits&) { return fixed({"auto", "on", "off"}); };
  k.baseline = [](const WorkloadTraits&) { return "auto"; };
  k.swept_by_default = never_swept;
  k.applies = [](const WorkloadTraits& t, const std::string&) { return with_ranks(t); };
  k.plan = [](const std::string& value, TrainingPlan& p) { p.ddp.find_unused_parameters = value; };
  return k;
}

Knob checkpoint_knob() {
  Knob k = training_only("checkpoint",
                         "activation checkpointing: off; blocks (each repeated block of the "
                         "model, recomputed in backward); every:N (every N-th block); budget:F "
                         "(torch.compile's activation memory budget, 0 < F <= 1)");
  k.values = [](const WorkloadTraits&) { return fixed({"off", "blocks", "every:2"}); };
  k.baseline = [](const WorkloadTraits&) { return "off"; };
  k.check_form = [](const std::string& value) {
    const auto colon = value.find(':');
    const std::string kind = value.substr(0, colon);
    const std::string number = colon == std::string::npos ? "" : value.substr(colon + 1);
    bool ok = value == "off" || value == "blocks";
    try {
      std::size_t used = 0;
      if (kind == "every" && !number.empty()) ok = std::stol(number, &used) >= 1 && used == number.size();
      if (kind == "budget" && !number.empty()) {
        const double f = std::stod(number, &used);
        ok = f > 0 && f <= 1 && used == number.size();
      }
    } catch (const std::exception&) {
      ok = false;
    }
    if (!ok)
      throw ConfigError("checkpoint '" + value +
                        "': expected off, blocks, every:N (N >= 1) or budget:F (0 < F <= 1)");
  };
  k.applies = [](const WorkloadTraits& t, const std::string& value) {
    if (value == "off") return Applicability::yes();
    return t.python_definition
               ? Applicability::yes()
               : Applicability::no("checkpointing wraps the model's blocks in Python: it needs "
                                   "the model's Python definition (a built-in or --from-python)");
  };
  k.plan = [](const std::string& value, TrainingPlan& p) { p.checkpoint = value; };
  return k;
}

}  // namespace

std::vector<Knob> training_scale_knobs() {
  return {
      accumulate_knob(),
      on_off_ddp("no_sync",
                 "while accumulating, all micro-batches but the last run under DDP's no_sync(): "
                 "their gradients are all-reduced once, with the last",
                 false, [](bool on, TrainingPlan& p) { p.no_sync = on; }),
      bucket_knob(),
      on_off_ddp("gradient_as_bucket_view",
                 "gradients are views into DDP's buckets: no copy into them, less memory", false,
                 [](bool on, TrainingPlan& p) { p.ddp.gradient_as_bucket_view = on; }),
      on_off_ddp("static_graph",
                 "DDP is told the graph is the same every step: it plans the buckets' order once "
                 "and skips the search for unused parameters",
                 false, [](bool on, TrainingPlan& p) { p.ddp.static_graph = on; }),
      on_off_ddp("broadcast_buffers",
                 "rank 0's buffers (batch-norm statistics) are broadcast at each forward", true,
                 [](bool on, TrainingPlan& p) { p.ddp.broadcast_buffers = on; }),
      find_unused_knob(),
      checkpoint_knob(),
  };
}

}  // namespace torchperf

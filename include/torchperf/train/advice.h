// Advice from a step-time breakdown, in the manner of the PyTorch profiler's removed TensorBoard
// overview and of the guides: each rule has a threshold, fires with its evidence, and names the
// knob change that addresses it (which the ladder then tries). Torch-free.
#pragma once

#include <string>
#include <vector>

#include "torchperf/advice/advice.h"
#include "torchperf/config/training_plan.h"
#include "torchperf/train/step_breakdown.h"

namespace torchperf {

struct AdviceContext {
  TrainingPlan plan;
  bool cuda = false;
  bool convolutional = false;
  bool torchscript = false;  // the executor knob applies (the step runs TorchScript)
  bool python_definition = false;  // the step can run in Python (step=compile)
  bool bf16 = false;        // the device computes in bf16 (amp=bf16 needs no gradient scaler)
  bool uint8_data = false;  // the transfer knob applies
  int usable_cores = 1;      // of each rank, under DDP
  int world_size = 1;        // DDP ranks (1: one process)
  bool reduced_precision_hardware = false;
  std::string reduced_precision_evidence;
};

// Rules that fire, the largest share of step time first.
std::vector<Advice> advise(const Breakdown& breakdown, const AdviceContext& context);

}  // namespace torchperf

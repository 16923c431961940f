// How one training configuration runs the loop: the knobs' values turned into settings that the
// `train` part reads (each training knob declares, in the registry, how it fills this plan).
// Torch-free, so configurations resolve and test without a model.
#pragma once

#include <string>

#include "torchperf/runtime/runtime.h"

namespace torchperf {

enum class Transfer { kFloat32, kUint8 };  // normalised on the host, or after the copy
enum class Amp { kOff, kBf16, kFp16 };

// DistributedDataParallel's settings (train --nproc N): each a knob of its own.
struct DdpPlan {
  long long bucket_mb = 25;             // bucket_cap_mb: gradients all-reduced per bucket
  bool gradient_as_bucket_view = false;  // gradients are views into the buckets (no copy)
  bool static_graph = false;            // the graph is the same every step (DDP plans once)
  bool broadcast_buffers = true;        // rank 0's buffers broadcast at each forward
  std::string find_unused_parameters = "auto";  // auto: on only where some get no gradient
};

struct TrainingPlan {
  int threads = 1;            // intra-op threads of the training thread
  long long batch = 32;
  bool channels_last = false;
  bool cudnn_benchmark = false;
  int workers = 0;            // loader threads; 0 = batches made in the training thread
  int prefetch = 2;           // batches in flight per worker
  bool pin_memory = false;
  bool non_blocking = false;
  Transfer transfer = Transfer::kFloat32;
  Amp amp = Amp::kOff;
  bool set_to_none = false;   // zero_grad(set_to_none=true)
  // Micro-batches per optimizer step (gradient accumulation); with no_sync, all but the last
  // skip DDP's all-reduce.
  int accumulate = 1;
  bool no_sync = false;
  std::string checkpoint = "off";  // off, blocks, every:N, budget:F (activation checkpointing)
  DdpPlan ddp;
  bool optimized_executor = true;  // TorchScript's graph executor optimizes (profiles, differentiates)
  // Who runs the step (the step knob): a runtime, and its value for the step (TorchScript's in
  // this process; Python eager's or a torch.compile mode's in a Python worker). Null: the
  // registry's baseline has not been planned (a plan made by hand), read as TorchScript.
  const Runtime* runtime = nullptr;
  std::string step;
  bool in_python() const { return runtime && runtime->worker() == RuntimeWorker::kPython; }
  // Whether the step is compiled (torch.compile), its compile reported apart from its steps.
  bool compiled() const { return runtime && runtime->compiles(step); }
};

std::string to_string(Transfer transfer);
std::string to_string(Amp amp);

}  // namespace torchperf

// How one training configuration runs the loop: the knobs' values turned into settings that the
// `train` part reads (each training knob declares, in the registry, how it fills this plan).
// Torch-free, so configurations resolve and test without a model.
#pragma once

#include <string>

namespace torchperf {

enum class Transfer { kFloat32, kUint8 };  // normalised on the host, or after the copy
enum class Amp { kOff, kBf16, kFp16 };

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
  bool optimized_executor = true;  // TorchScript's graph executor optimizes (profiles, differentiates)
  // Who runs the step: "torchscript" (LibTorch, in this process) or, in a Python worker, "eager",
  // "compile", "compile-reduce-overhead", "compile-max-autotune" (the step knob).
  std::string step = "torchscript";
  bool in_python() const { return step != "torchscript"; }
};

std::string to_string(Transfer transfer);
std::string to_string(Amp amp);

}  // namespace torchperf

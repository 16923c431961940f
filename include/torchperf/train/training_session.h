// One training loop under one configuration: a TorchScript model in train mode, a loss, an
// optimizer from torch::optim, the input pipeline, autocast and the gradient scaler. step() runs
// one step and says where its time went; several sessions over one TrainingContext share the data
// and the model source, so that the ladder can interleave them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "torchperf/config/configuration.h"
#include "torchperf/config/knob.h"
#include "torchperf/measure/clock.h"
#include "torchperf/models/workload_traits.h"
#include "torchperf/train/advice.h"
#include "torchperf/train/step_breakdown.h"
#include "torchperf/train/training_data.h"

namespace torchperf {

class ModelSource;

// Where the step's ranks run (train --nproc N): torch's launcher starts N per node, the nodes
// meeting at a c10d rendezvous; the step is then DDP's, in Python.
struct RankSpec {
  int nproc = 1;                   // ranks on this node
  int nnodes = 1;
  int node_rank = 0;               // 0 drives (its launcher hosts the rendezvous); others follow
  std::string rdzv_endpoint;       // HOST:PORT; "" on one node (a port of its own)
  double collective_timeout_s = 120;  // a rank stuck ends the others' all-reduce after this
  double join_timeout_s = 120;     // the nodes must all join the rendezvous within this
  int world_size() const { return nproc * nnodes; }
  bool distributed() const { return world_size() > 1; }
};

struct TrainingSpec {
  std::string model;                  // builtin:NAME or a TorchScript file
  DataSpec data;
  std::string loss = "auto";          // auto (from the targets), cross-entropy, mse
  std::string optimizer = "sgd";      // sgd (momentum 0.9), adam
  double learning_rate = 0.01;
  std::string device = "auto";        // auto, cpu, cuda, cuda:N
  std::string grad_scaler = "auto";   // auto (with amp=fp16), on, off
  std::uint64_t seed = 0;
  // A larger batch than the loop's own (reference_batch) learns differently: none keeps the rate,
  // linear scales it with the batch (learning_rate * batch / reference_batch).
  std::string lr_scaling = "none";
  long long reference_batch = 0;  // 0: the rate is never scaled
  RankSpec ranks;
  // Per process (each rank): a step whose peak resident memory (allocated, on CUDA) passes it
  // is out of memory; the ladder does not try a batch its estimate says would not fit. 0: none.
  std::int64_t memory_cap_bytes = 0;
};

// What every session of one run shares. Throws UsageError (flags, data), ModelError (model).
struct TrainingContext {
  TrainingSpec spec;
  std::shared_ptr<const ModelSource> model;
  std::shared_ptr<const TrainingData> data;
  std::string device;       // "cpu", "cuda:0"
  std::string loss;         // cross-entropy or mse
  WorkloadTraits traits;    // what decides which training knobs apply
  bool reduced_precision_hardware = false;  // bf16 (CPU AVX-512 BF16/AMX) or CUDA tensor cores
  bool bf16_hardware = false;               // of those, bf16 (no gradient scaler needed)
  std::string reduced_precision_evidence;
  // With ranks: how they share the machine ("2 ranks x 1 thread on 2 usable cores, gloo"), and a
  // warning where they oversubscribe it.
  std::string ranks_plan;
  std::string ranks_warning;
  // The clock every step is timed with (the project's one; tests may script it).
  std::shared_ptr<TimeSource> clock = std::make_shared<SteadyTimeSource>();
  static TrainingContext open(const TrainingSpec& spec);
  // The optimizer's rate under a plan (TrainingSpec::lr_scaling).
  double learning_rate(const TrainingPlan& plan) const;
  // What the advice rules need to know about this run under one plan.
  AdviceContext advice_context(const TrainingPlan& plan) const;
};

class TrainingSession {
 public:
  // Resolves the configuration's training knobs (ConfigError for ones that do not apply).
  TrainingSession(const TrainingContext& context, const Configuration& config);
  ~TrainingSession();

  // One step. With breakdown, the device is synchronised at every phase boundary so that the
  // phases add up to the step; without, only at the end (true throughput, overlap kept).
  StepTimes step(bool breakdown = true);
  // Warm-up steps then measured steps with the breakdown; the memory peak is of the measured ones.
  Breakdown run(std::size_t warmup, std::size_t steps,
                const std::function<void(std::size_t done)>& progress = nullptr,
                const std::function<void(std::size_t index, const StepTimes&)>& on_step = nullptr);
  // Process-wide settings of this configuration (threads, cuDNN benchmark): set them around the
  // steps, and restore them after (the ladder switches between sessions): ScopeExit.
  Undo enter() const;

  const ResolvedConfiguration& configuration() const;
  const TrainingPlan& plan() const;
  std::size_t steps_done() const;
  std::size_t skipped_examples() const;
  std::int64_t skipped_steps() const;
  bool on_cuda() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace torchperf

// The input pipeline of a training loop, on LibTorch's data API (torch::data): batches made by
// loader threads ahead of the step (workers, prefetch), in order, optionally in pinned memory,
// epoch after epoch. Corrupt examples are skipped and counted, or fail the run with strict.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <memory>

#include "torchperf/config/training_plan.h"

namespace torchperf {

class TrainingData;

struct LoaderOptions {
  long long batch = 32;
  int workers = 0;   // 0: batches are made in the calling thread, on demand
  int prefetch = 2;  // batches in flight per worker
  bool pin_memory = false;
  Transfer transfer = Transfer::kFloat32;
  bool strict = false;
  bool shuffle = true;
  static LoaderOptions from(const TrainingPlan& plan, bool strict);
};

struct Batch {
  at::Tensor inputs;   // N x ... (uint8 for transfer=uint8)
  at::Tensor targets;  // N (classes) or N x ... (regression)
};

class BatchLoader {
 public:
  // Throws UsageError when the data hold fewer examples than one batch.
  BatchLoader(std::shared_ptr<const TrainingData> data, LoaderOptions options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // The next batch (a new epoch starts when one ends). A batch may be short by the examples that
  // were skipped. Rethrows what a loader thread threw (ImageDecodeError with strict).
  Batch next();
  std::size_t skipped() const;  // corrupt examples skipped so far
  std::size_t epochs() const;   // epochs started
  const LoaderOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace torchperf

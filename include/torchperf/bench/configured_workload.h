// A workload opened from bench's options and prepared under one configuration, for a caller that
// runs it itself (serve): the same loading, input checks and one-time transforms that bench times,
// so a served model is the model that was measured.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "torchperf/bench/bench_options.h"
#include "torchperf/config/configuration.h"
#include "torchperf/models/workload.h"

namespace torchperf {

struct ConfiguredWorkload {
  std::string model_name;
  Workload workload;  // its inputs prepared as the configuration feeds them
  ResolvedConfiguration config;
  // The inputs as the user gives them (the spec's dtypes, before precision or format change
  // them), at the configuration's batch: what a client sends.
  std::vector<at::Tensor> given_inputs;
  // The batches the model takes as it runs here: a torch.export program's range (its one batch
  // when it was exported static); any for TorchScript. batch_max 0: no bound.
  std::int64_t batch_min = 1, batch_max = 0;
  // Per input, per dimension after the batch: a named dimension's longest size (its --dim MAX,
  // what a client may send), 0 for a fixed one.
  std::vector<std::vector<std::int64_t>> longest;
  // The same for its shortest size (its --dim MIN): a request below it is refused by name.
  std::vector<std::vector<std::int64_t>> shortest;
  // Per input, per dimension after the batch: a named dimension's name, "" for a fixed one.
  std::vector<std::vector<std::string>> dim_names;
};

// A model that runs the configuration elsewhere (serve's Python worker: worker/
// python_served_model.h), made once the workload is open: the configuration is resolved, the
// inputs are at its batch as a client sends them, and the model opened here is the one whose
// input names it takes. Nothing of the configuration is applied in this process.
using RemoteModelMaker = std::function<std::unique_ptr<Model>(
    const ResolvedConfiguration& config, const WorkloadTraits& traits, const Workload& workload)>;

// Throws as bench does: UsageError for bad options, ModelError for a model that cannot be
// opened, RuntimeFailure naming the configuration when it cannot be applied. A configuration
// whose runtime runs in the Python worker needs `remote` (else UsageError).
ConfiguredWorkload open_configured_workload(const BenchOptions& options,
                                            const RemoteModelMaker& remote = nullptr);

}  // namespace torchperf

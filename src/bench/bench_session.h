// One bench run's session: everything about the workload that does not depend on the
// configuration (the model's source, what it is fed, the device, the limits), opened once and
// shared by the run's sides; and the workload a configuration starts from.
#pragma once

#include <torch/script.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/bench/bench_options.h"
#include "torchperf/feed/input_spec.h"
#include "torchperf/feed/length_distribution.h"
#include "torchperf/feed/shape_stream.h"
#include "torchperf/models/model.h"
#include "torchperf/models/workload.h"

namespace torchperf {

// Everything about the workload that does not depend on the configuration.
struct Session {
  std::unique_ptr<ModelSource> source;
  std::optional<InputSpec> spec;
  std::vector<NamedDim> dims;  // one per named dimension of spec (--dim, or a file of samples)
  std::vector<std::vector<at::Tensor>> samples;  // a file's real samples, in spec's order
  std::string input_source;
  std::vector<c10::IValue> file_inputs;
  c10::Device device = c10::kCPU;
  std::uint64_t seed = 0;
  std::int64_t memory_cap_bytes = 0;
  double compile_timeout_s = 0;
  // A reference call longer than this ends the run before anything else is timed (0: none).
  double call_limit_s = 0;
  double time_budget_s = 0;
  std::size_t stream_timed_batches = kFullTimedBatches;
  std::int64_t stream_batch = 16;  // the batch a stream's bucket edges are designed for
  bool check_padding = true;
};

// The model opened and what it is fed resolved (--input, --dim, --inputs-file, or the model's
// own inputs), each bad value refused by name before anything runs.
Session open_session(const BenchOptions& options);
// Throws WorkloadError naming forward's arguments when the inputs are too few or too many.
void check_input_count(const Model& model, const std::vector<c10::IValue>& inputs,
                       const std::string& name);
// The stream a session's named dimensions give, at the batch its bucket edges are designed for.
StreamRecipe stream_recipe_of(const Session& s);
// A fresh workload: the model loaded onto the device, fed its inputs at batch 1.
Workload load_workload(const Session& s);

}  // namespace torchperf

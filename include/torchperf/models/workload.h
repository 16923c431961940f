// A workload: a loaded model and the inputs it is fed on one device. Knobs transform it; bench
// times it. Its traits are what knob applicability is decided on.
#pragma once

#include <torch/script.h>

#include <memory>
#include <optional>
#include <vector>

#include "torchperf/models/model.h"
#include "torchperf/feed/shape_stream.h"
#include "torchperf/models/workload_traits.h"

namespace torchperf {

struct Workload {
  std::unique_ptr<Model> model;
  std::vector<c10::IValue> inputs;
  c10::Device device = c10::kCPU;
  // Where inputs come from: a spec (re-made per batch size, seeded) or a file (fixed).
  std::optional<InputSpec> spec;
  std::uint64_t seed = 0;
  // Inputs whose shapes vary (a spec with named dimensions): finish_stream builds its batches
  // with a configuration's policy (batch, padding, batching), and a timed call runs them all, one
  // pass over the stream. `inputs` then holds unpadded samples at the typical sizes: what the
  // reference, the accuracy guard and FLOP counting see.
  std::optional<StreamRecipe> stream_recipe;
  std::shared_ptr<const ShapeStream> stream;
};

// The stream's batches built from the recipe with `policy` (stream_policy_of the configuration)
// and moved to the workload's device, by the run that times them. A workload without named
// dimensions is left as is.
void finish_stream(Workload& workload, const StreamPolicy& policy);

// Inspects a loaded (untransformed) workload: graph operators, input ranks and dtypes, device,
// and the forms the model comes in (program: its torch.export program's signature, when the
// model has one besides the form loaded, as a built-in does).
WorkloadTraits describe_workload(Workload& workload, bool inputs_from_file,
                                 const ProgramSignature* program = nullptr);

}  // namespace torchperf

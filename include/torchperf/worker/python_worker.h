// The Python runtime (runtime=python): a configuration run by PyTorch in the .venv's Python, eager
// or under torch.compile, in a worker of its own (python/torchperf/worker.py). This process times
// it block by block with the same sampler as a C++ side, and judges its outputs against the same
// fp32 reference, computed from the same inputs: the runtimes differ in who runs the model, not in
// how it is measured.
#pragma once

#include "torchperf/bench/bench_options.h"
#include "torchperf/bench/bench_runner.h"
#include "torchperf/bench/measurement.h"
#include "torchperf/measure/clock.h"
#include "torchperf/worker/paired_workers.h"

namespace torchperf {

// options.config names runtime=python; its other knobs are resolved for that runtime (graph
// eager | compile | compile-max-autotune …). The model is a torch.export program or TorchScript
// (a built-in is saved as TorchScript for Python to load). The reference at the configuration's
// batch comes from options.reference_files when its inputs file lies beside it (REF.inputs.pt),
// else it is computed here. Worker failures are RuntimeFailure naming the log; the errors the
// worker answers keep their kind (a failed torch.compile is a CompileError).
BenchResult measure_python_in_worker(const BenchOptions& options, const WorkerRun& run,
                                     TimeSource& time, const BenchProgress& progress = nullptr);

// The inputs file beside a reference file (save_reference's inputs_path in tune).
std::string inputs_beside(const std::string& reference_path);

}  // namespace torchperf

// A model that runs in a Python worker for a caller that runs it call by call (serve hosting a
// Python or engine winner, issue 84): the configuration prepared there as a tune's Python point
// prepares it (the same request, so the same callable), then each call's tensors handed over in
// shared memory (python-call), never as JSON. No Python is linked into this process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "torchperf/bench/bench_options.h"
#include "torchperf/config/configuration.h"
#include "torchperf/models/model.h"
#include "torchperf/models/workload_traits.h"
#include "torchperf/process/shared_region.h"
#include "torchperf/worker/protocol.h"
#include "torchperf/worker/worker_process.h"

namespace torchperf {

class PythonServedModel final : public Model {
 public:
  // Starts the worker and prepares the configuration on `example` (the first call, which
  // compiles under torch.compile and converts for an engine; the caches make a second start
  // warm). `tag` tells its log and files apart. Throws as a Python point does: the worker's
  // errors keep their kind (a failed compile is a CompileError), a crash is a RuntimeFailure
  // naming the log.
  PythonServedModel(const BenchOptions& options, const ResolvedConfiguration& config,
                    const Configuration& requested, const WorkloadTraits& traits,
                    const std::vector<at::Tensor>& example, std::vector<std::string> input_names,
                    std::size_t required_inputs, const std::string& tag);
  ~PythonServedModel() override;

  // One call in the worker: inputs on the CPU in, outputs (a tuple) on the CPU out. A worker that
  // has ended is started again first (its log says why it ended); a call the model fails throws
  // with the worker's message, and the worker serves the next.
  c10::IValue forward(const std::vector<c10::IValue>& inputs) override;
  std::vector<std::string> input_names() const override { return names_; }
  std::size_t required_inputs() const override { return required_; }
  // Prepared in the worker as configured: nothing to change here.
  bool is_training() const override { return false; }
  void set_training(bool) override {}
  void to(c10::Device) override {}
  void to(c10::ScalarType) override {}

  // Tensors of these shapes and dtypes laid out in the file the next call's inputs are read from:
  // a batch built in them crosses to the worker without another copy (forward finds them there).
  // Valid until the next call of this or forward.
  std::vector<at::Tensor> input_buffers(
      const std::vector<std::pair<std::vector<std::int64_t>, at::ScalarType>>& specs);

  // The next forward measures what it holds in the worker (PythonCallRequest::measure_memory);
  // last_call_bytes() reads it after.
  void measure_next_call() { measure_next_ = true; }
  std::int64_t last_call_bytes() const { return last_call_bytes_; }
  // The worker's resident memory now (what prepared shapes took there); -1 when it has ended.
  std::int64_t resident_bytes() const;
  // The device the worker runs the model on ("cpu", "cuda:0").
  const std::string& device() const { return request_.device; }
  // "in a Python worker (pid 123, log PATH)": the start-up line's words.
  std::string describe() const;
  const std::string& log() const { return log_; }

 private:
  void start();
  nlohmann::json ask(const nlohmann::json& request, const std::string& doing, double timeout_s);

  PythonSideRequest request_;
  ChildEnvironment environment_;
  std::vector<std::string> names_;
  std::size_t required_ = 0;
  std::string log_, name_, inputs_file_, stream_file_;
  double prepare_timeout_s_ = 0;
  std::unique_ptr<WorkerSession> worker_;
  SharedRegion in_, out_;
  std::size_t starts_ = 0;
  bool measure_next_ = false;
  std::int64_t last_call_bytes_ = 0;
};

}  // namespace torchperf

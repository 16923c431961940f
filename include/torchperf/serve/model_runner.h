// What the server runs a batch of requests on, apart from HTTP and threads: a model instance with
// the tensors it takes and gives (its signature), and the check every request passes before it
// may join a batch. Torch-free, so that the server and its tests need no LibTorch headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "torchperf/serve/batching_policy.h"
#include "torchperf/serve/inference_request.h"
#include "torchperf/serve/inference_response.h"
#include "torchperf/serve/shape_plan.h"

namespace torchperf {

// The tensors a model takes and gives, the batch dimension first as -1.
struct ModelSignature {
  std::vector<WireTensorSpec> inputs;
  std::vector<WireTensorSpec> outputs;
  // The batches one model call takes (a torch.export program's range; one batch when it was
  // exported static). A request outside it is refused; requests are merged only within it.
  std::int64_t batch_min = 1, batch_max = 0;  // batch_max 0: no bound
  // A varying length (a --dim): where a request's length is read (input, dimension; -1: the model
  // has none), and how requests of different lengths share a call. They merge, padded with zeros
  // to `padded` of the call's longest, only where padding was checked not to change an answer.
  struct Lengths {
    int input = -1, dim = -1;
    bool merge = false;
    std::function<std::int64_t(std::int64_t)> padded;  // the padding knob's rule
    std::vector<std::int64_t> edges;  // the padding knob's buckets: the queue's too
    std::string check;                // what the padding check found, for the start-up line
  } lengths = {};
  // What the start paid for the model's compiled artefact, cold or warm (issue 62, part 4):
  // "warm: its AOTInductor package from the cache" or "cold: its AOTInductor package compiled in
  // 41.2 s, cached for the next start"; "" when the model has none (TorchScript, eager).
  std::string start = {};
  // The model replays CUDA graphs (cuda_graphs=on): a call runs fast only at a captured shape, so
  // a shape plan captures its rows in powers of two and pads a call's rows up to one.
  bool graphs = false;
  // What one call holds in memory on the model's device while it runs (issue 63): a fixed part
  // plus a part per padded token (per sample, without a length), fitted at start-up from two calls
  // at the longest length (the most a token takes where attention grows with it); and what a
  // token's request and answer hold besides (the inputs' wire form, the outputs' JSON form). The
  // server's queue bounds a call by their sum (queue_policy). bytes_per_token 0: not measured
  // (ModelRunner::measure_call_memory not called, the echo, a model of one batch size).
  struct CallMemory {
    double fixed_bytes = 0, bytes_per_token = 0, answer_bytes_per_token = 0;
    int cuda_device = -1;       // the CUDA device it was read on; -1: the CPU allocator
    std::string measured = {};  // "calls of 2 and 4 rows at length 64", or why not
  } call_memory = {};
};

// One instance of the model: the server gives each instance a thread of its own, and an instance
// is called from that thread only.
class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual const ModelSignature& signature() const = 0;
  // Called once on the instance's thread before its first batch (per-thread state such as the
  // intra-op thread count), and once after its last.
  virtual void enter_thread() {}
  virtual void exit_thread() {}
  // Runs checked requests as one model call (their batches concatenated along the first
  // dimension) and returns each request's outputs, in signature order, split back. Throws when
  // the model fails: every request of the batch is answered with the message.
  virtual std::vector<std::vector<WireTensor>> run(
      const std::vector<const InferenceRequest*>& batch) = 0;
  // Issue 62, the guard at every edge: before serving, where lengths merge, a sample of the
  // shortest length each bucket holds (the one its edge pads most: the previous edge + 1, at
  // least the dimension's shortest, by name) runs at the configuration's batch alone and padded to
  // the edge (at most the longest served), and the two answers are compared under tune's default
  // guard. The start-up check then names each pair; a bucket with nothing to pad (one length) is
  // skipped; an edge that changes an answer stops merging (requests run at their own length).
  virtual void check_edges(const std::vector<std::int64_t>& /*edges*/,
                           const std::map<std::string, std::int64_t>& /*shortest*/) {}
  // Issue 63: fills signature().call_memory by calling the model at start-up (what it measures:
  // ModelSignature::CallMemory). The server asks one instance (all share a signature), and none
  // under --max-call-memory off. A runner without a model (the echo) measures nothing.
  virtual void measure_call_memory() {}
  // Issue 62, part 3: before serving, each shape of the plan in order runs once (captured where
  // the model replays CUDA graphs), until the plan's memory budget would be passed or a shape
  // fails; what was prepared, and from then on a call at another shape runs as it comes (never
  // captured). A runner with nothing to prepare (the echo) prepares nothing.
  virtual PreparedShapes prepare_shapes(const ShapePlan& /*plan*/) { return {}; }
  // The calls run since prepare_shapes at a shape it did not prepare (0 without a plan). Read
  // from the instance's thread, between its calls.
  virtual std::size_t off_plan_calls() const { return 0; }
};

// Puts a request's inputs in signature order (by name when the names match, else in the order
// given) and checks their count, datatypes and shapes, and the outputs it asks for. RequestError
// naming the input and what was expected.
void conform_request(const ModelSignature& signature, InferenceRequest& request);

// The samples a checked request carries (the first dimension of its first input).
std::int64_t request_batch(const InferenceRequest& request);
// What a checked request weighs in the queue: its samples and its length (0 without one).
QueuedSize queued_size(const ModelSignature& signature, const InferenceRequest& request);

// Issue 63: what one call may hold unless --max-call-memory says: 80% of the memory available
// now (the instances loaded; the device's for a model on CUDA), shared among the instances, each
// of which may run a call at once. No bound (call_bytes 0) where neither the kernel nor the
// device says, or nothing was measured.
BatchingPolicy::MemoryBound available_call_memory(const ModelSignature& signature,
                                                  std::size_t instances);
// The start-up line on the bound, given the queue's policy (queue_policy: the measured figures
// with the bytes a call may hold): what a call takes, what it may hold, and the padded tokens
// (samples) that fit.
std::string describe_call_memory(const ModelSignature& signature, const BatchingPolicy& policy);

// Checked requests cut, in order, into runs whose batches add up to at most the signature's
// batch_max and, unless lengths merge, whose sizes agree: each run is one model call. Each
// request is within the range by itself, so each run is too.
std::vector<std::vector<const InferenceRequest*>> split_by_batch_range(
    const ModelSignature& signature, const std::vector<const InferenceRequest*>& batch);

// A request's outputs as asked: all of them, or the names it listed, in its order.
std::vector<WireTensor> select_outputs(const InferenceRequest& request,
                                       std::vector<WireTensor> outputs);

// The server without a model: answers each request with its inputs as outputs "output0" … It
// measures what the HTTP path, the queue and the load generator cost by themselves.
class EchoRunner final : public ModelRunner {
 public:
  explicit EchoRunner(std::vector<WireTensorSpec> inputs);
  const ModelSignature& signature() const override { return signature_; }
  std::vector<std::vector<WireTensor>> run(
      const std::vector<const InferenceRequest*>& batch) override;

 private:
  ModelSignature signature_;
};

}  // namespace torchperf

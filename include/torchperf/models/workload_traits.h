// The facts about a workload that decide which knobs apply (torch-free, so configurations can be
// resolved and tested without a model).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchperf {

// Whether a knob value applies, and why not in words a user understands.
struct Applicability {
  bool applies = true;
  std::string reason;
  static Applicability yes() { return {}; }
  static Applicability no(std::string why) { return {false, std::move(why)}; }
};

// What a torch.export program says of its inputs' batch dimension.
struct ProgramBatch {
  bool dynamic = true;
  long long min = 1, max = 0;  // max 0: no bound
  long long exported = 1;      // the batch it was exported with (a static program's only one)
  std::string shape;           // its inputs, for messages ("x: float32[batch,784] (batch 1..4096)")
};

struct WorkloadTraits {
  // The forms the model comes in: a TorchScript graph (a file, or a built-in scripted from its
  // Python definition), a torch.export program (a .pt2, or a built-in exported on first use), or
  // both (built-ins). Which runtimes take the model follows from them (runtime/runtime.h).
  bool torchscript_form = true;
  bool program_form = false;
  ProgramBatch program;  // when program_form
  // The model as the runtime resolving a configuration sees it (Runtime::view): the form it runs
  // and, for a program, its batch range below. Knobs decide on these.
  bool torchscript = true;        // graph knobs need a TorchScript graph
  bool exported_program = false;  // a torch.export program: AOTInductor compiles it
  // The batch dimension may change (a TorchScript module, or a program exported with a dynamic
  // batch within [batch_min, batch_max]; batch_max 0: no bound). A static program's batch is
  // default_batch, and `exported_shape` describes its inputs for messages.
  bool dynamic_batch = true;
  long long batch_min = 1, batch_max = 0;
  std::string exported_shape;
  bool convolutional = false;     // the graph has 2-D convolutions
  bool linear = false;  // the graph has Linear, LSTM or GRU layers: int8-dynamic applies
  bool conv_bias_before_bn = false;  // a convolution's bias feeds a batch norm (conv_bias=fold)
  std::vector<long long> hidden_linear_sizes;  // between two Linear layers (pad)
  bool image_input = false;       // some input is a 4-D floating tensor
  bool floating_input = false;    // some input is floating point
  bool cuda = false;              // runs on a CUDA device
  bool cpu_fuser = true;          // the TensorExpr fuser can compile for CPU (LLVM present)
  bool inputs_from_file = false;  // batch is fixed by the file
  // Named input dimensions whose sizes vary (--dim): the padding and batching knobs apply, and
  // these bucket edges (the lengths' quartiles and their longest, as drawn) are what a sweep tries.
  std::vector<std::string> named_dims;
  std::string suggested_buckets;         // "buckets:E1/E2/..." for the first named dimension
  // Its batches' longest lengths (batch_longest_lengths) and its longest: how many widths a
  // padding leaves, which a graph compiled per shape pays for each.
  std::vector<std::int64_t> stream_batch_longest;
  std::int64_t stream_longest = 0;
  bool uint8_data = false;        // training data are 8-bit images (the transfer knob)
  bool python_definition = false;  // train: the model's Python definition can be built (a built-in)
  // The caller's own nn.Module came with the program (a tune from Python): its process runs an
  // AOTInductor package through Python's loader, which is then measured as such.
  bool caller_module = false;
  // The engines installed beside torch in the Python worker's Python (onnxruntime, openvino: the
  // runtimes of those names take a program), and those of them with a CUDA execution provider.
  std::vector<std::string> engines;
  std::vector<std::string> cuda_engines;
  bool saved_training = false;    // the training flag the model was saved with
  bool can_train_mode = true;     // has a training flag at all
  int usable_cores = 1;  // of each rank under DDP (the machine's shared among its ranks)
  int world_size = 1;    // train's DDP ranks, every node's (--nproc x --nnodes)
  int default_threads = 1;      // LibTorch's intra-op threads at start-up
  int default_interop_threads = 1;  // and its inter-op threads
  long long default_batch = 1;  // from the inputs file, a static program, or 1
  // Not a fact of the model: the name of the runtime whose view these traits are (set by
  // Runtime::view; "" before any), so that the knobs a runtime decides answer for it.
  std::string runtime;
};

}  // namespace torchperf

// The facts about a workload that decide which knobs apply (torch-free, so configurations can be
// resolved and tested without a model).
#pragma once

#include <string>
#include <vector>

namespace torchperf {

struct WorkloadTraits {
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
  bool uint8_data = false;        // training data are 8-bit images (the transfer knob)
  bool saved_training = false;    // the training flag the model was saved with
  bool can_train_mode = true;     // has a training flag at all
  int usable_cores = 1;
  int default_threads = 1;      // LibTorch's intra-op threads at start-up
  int default_interop_threads = 1;  // and its inter-op threads
  long long default_batch = 1;  // from the inputs file, a static program, or 1
  // Not a fact of the model: set by resolve() when runtime=python, so that the other knobs
  // answer for the Python runtime (its graph values, the knobs it does not apply).
  bool python_runtime = false;
};

}  // namespace torchperf

#include "torchperf/models/workload.h"

#include <ATen/Parallel.h>
#include <algorithm>

#include "torchperf/compat/torch_compat.h"
#include "torchperf/models/exported_model.h"
#include "torchperf/models/graph_rewrites.h"
#include "torchperf/models/python_side.h"
#include "torchperf/measure/environment.h"

namespace torchperf {

namespace {

ProgramBatch batch_of(const ProgramSignature& sig) {
  ProgramBatch b;
  b.dynamic = sig.dynamic_batch;
  b.min = sig.batch_min;
  b.max = sig.batch_max;
  b.exported = sig.exported_batch;
  b.shape = sig.describe();
  return b;
}

}  // namespace

WorkloadTraits describe_workload(Workload& workload, bool inputs_from_file,
                                 const ProgramSignature* program) {
  WorkloadTraits traits;
  auto* ts = workload.model->as_torchscript();
  traits.torchscript = ts != nullptr;
  traits.torchscript_form = ts != nullptr;
  if (program) {
    traits.program_form = true;
    traits.program = batch_of(*program);
  }
  if (ts) {
    traits.convolutional = ts->uses_operator("aten::conv2d") ||
                           ts->uses_operator("aten::_convolution") ||
                           ts->uses_operator("aten::convolution");
    traits.linear = ts->uses_operator("aten::linear") || ts->uses_operator("aten::lstm") ||
                    ts->uses_operator("aten::gru");
    traits.conv_bias_before_bn = count_conv_bias_before_batch_norm(ts->module()) > 0;
    for (const auto size : hidden_linear_sizes(ts->module()))
      traits.hidden_linear_sizes.push_back(size);
    traits.can_train_mode = ts->module().hasattr("training");
  }
  if (auto* ep = workload.model->as_exported()) {
    const ProgramSignature& sig = ep->signature();
    traits.exported_program = true;
    traits.program_form = true;
    traits.program = batch_of(sig);
    traits.convolutional = sig.convolutional;
    traits.linear = sig.linear;
    traits.can_train_mode = false;
    traits.dynamic_batch = sig.dynamic_batch;
    traits.batch_min = sig.batch_min;
    traits.batch_max = sig.batch_max;
    traits.exported_shape = sig.describe();
  }
  for (const auto& v : workload.inputs) {
    if (!v.isTensor()) continue;
    const auto& t = v.toTensor();
    if (at::isFloatingType(t.scalar_type())) {
      traits.floating_input = true;
      if (t.dim() == 4) traits.image_input = true;
    }
  }
  traits.cuda = workload.device.is_cuda();
  if (traits.program_form)
    for (const auto& engine : installed_engines()) {
      traits.engines.push_back(engine.name);
      if (engine.cuda) traits.cuda_engines.push_back(engine.name);
    }
  traits.cpu_fuser = traits.cuda || compat::cpu_fuser_available();
  traits.inputs_from_file = inputs_from_file;
  if (workload.stream_recipe) {
    for (const auto& d : workload.stream_recipe->dims) traits.named_dims.push_back(d.name);
    if (!workload.stream_recipe->dims.empty()) {
      const LengthDistribution& first = workload.stream_recipe->dims[0].distribution;
      traits.suggested_buckets =
          suggested_buckets(first, workload.stream_recipe->policy.batch, workload.seed);
      traits.stream_batch_longest =
          batch_longest_lengths(first, workload.stream_recipe->policy.batch, workload.seed);
      traits.stream_longest = first.max;
    }
  }
  traits.saved_training = workload.model->is_training();
  traits.usable_cores = std::max(1, usable_cores());
  traits.default_threads = at::get_num_threads();
  traits.default_interop_threads = at::get_num_interop_threads();  // reads; does not start the pool
  if (auto* ep = workload.model->as_exported())
    traits.default_batch = ep->signature().dynamic_batch
                               ? std::max<long long>(1, ep->signature().batch_min)
                               : ep->signature().exported_batch;
  if (inputs_from_file && !workload.inputs.empty() && workload.inputs[0].isTensor() &&
      workload.inputs[0].toTensor().dim() > 0)
    traits.default_batch = workload.inputs[0].toTensor().size(0);
  return traits;
}

void finish_stream(Workload& workload, const StreamPolicy& policy) {
  if (!workload.stream_recipe) return;
  workload.stream_recipe->policy = policy;
  auto stream = std::make_shared<ShapeStream>(build_stream(*workload.stream_recipe));
  for (auto& batch : stream->batches)
    for (auto& v : batch.inputs) v = v.toTensor().to(workload.device);
  workload.stream = std::move(stream);
}

}  // namespace torchperf

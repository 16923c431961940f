#include "bench_session.h"

#include <algorithm>

#include "torchperf/bench/bench_runner.h"
#include "torchperf/error.h"
#include "torchperf/feed/inputs.h"
#include "torchperf/models/exported_model.h"
#include "torchperf/text.h"

namespace torchperf {

Session open_session(const BenchOptions& options) {
  Session s;
  s.source = open_model(options.model);
  s.device = resolve_device(options.device);
  s.seed = options.seed;
  s.memory_cap_bytes = options.memory_cap_bytes;
  s.compile_timeout_s = options.compile_timeout_s;
  s.time_budget_s = options.time_s;
  s.stream_timed_batches = options.stream_timed_batches;
  s.check_padding = options.check_padding;
  if (options.stream_batch > 0) {
    s.stream_batch = options.stream_batch;
  } else if (const auto batch = options.config.get("batch")) {
    if (const auto n = positive_whole_number(*batch)) s.stream_batch = *n;
  }
  // The reference call is a cold first call (oneDNN's primitives, the profiling executor: 20 ms
  // for a 4-row MLP here): only one far beyond the budget, and beyond a second, is conclusive.
  if (options.stop_when_a_call_exceeds_time) s.call_limit_s = std::max(10 * options.time_s, 1.0);
  if (!options.inputs_file.empty()) {
    s.input_source = "file:" + options.inputs_file;
    if (auto samples = load_input_samples(options.inputs_file)) {
      if (!options.dims.empty())
        throw UsageError("--dim " + options.dims.front() + ": the samples of --inputs-file " +
                         options.inputs_file + " give the sizes themselves");
      // Real samples of varying sizes: a stream of them, like a --dim one.
      if (samples->spec.names_arguments()) {
        const auto model = s.source->load();
        order_samples(*samples, in_forward_order(samples->spec, model->input_names(),
                                                 model->required_inputs(), s.source->name()));
      }
      if (samples->dims.empty())
        throw WorkloadError("inputs file '" + options.inputs_file + "': its " +
                            std::to_string(samples->samples.size()) + " samples have the same "
                            "sizes; save them batched (torch.stack) as one tuple of tensors");
      s.spec = samples->spec;
      s.dims = samples->dims;
      s.samples = std::move(samples->samples);
      s.source->vary(*s.spec, s.dims);
    } else {
      s.file_inputs = load_inputs_file(options.inputs_file);
    }
  } else if (!options.input_spec.empty()) {
    s.spec = parse_input_spec(options.input_spec);
    s.input_source = to_string(*s.spec);
    if (s.spec->names_arguments()) {
      // Fed positionally from here on: forward's argument names put each entry in its place.
      const auto model = s.source->load();
      s.spec = in_forward_order(*s.spec, model->input_names(), model->required_inputs(),
                                s.source->name());
    }
    std::vector<NamedDim> given;
    for (const auto& d : options.dims) given.push_back(parse_dim_option(d));
    s.dims = dims_for(s.spec->named_dims(), given);
    if (!s.dims.empty()) s.source->vary(*s.spec, s.dims);
  } else if (auto spec = s.source->default_inputs()) {
    if (!options.dims.empty())
      throw UsageError("--dim " + options.dims.front() + ": the model's own inputs (" +
                       to_string(*spec) + ") name no dimension; give --input with one named, e.g. "
                       "int64:S@0..30522");
    s.spec = spec;
    s.input_source = to_string(*spec);
  } else {
    throw UsageError("model '" + options.model +
                     "': expected --input SPEC (e.g. --input 3x224x224) or --inputs-file FILE; a "
                     "TorchScript file does not say what it is fed");
  }
  // Checked where the run starts (bench, tune's reference), not again by each of tune's points,
  // which read that reference: a file of real samples may be hundreds of megabytes.
  if (!options.calibration_file.empty() && options.reference_files.empty())
    check_calibration_file(options.calibration_file, s.spec ? &*s.spec : nullptr, s.file_inputs);
  return s;
}

void check_input_count(const Model& model, const std::vector<c10::IValue>& inputs,
                       const std::string& name) {
  const auto names = model.input_names();
  const std::size_t required = model.required_inputs();
  if (inputs.size() >= required && inputs.size() <= names.size()) return;
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i)
    list += (i ? ", " : "") + names[i] + (i >= required ? "=default" : "");
  const std::string count = required == names.size()
                                ? std::to_string(names.size())
                                : std::to_string(required) + " to " + std::to_string(names.size());
  throw WorkloadError("model '" + name + "': forward takes " + count + " input" +
                      (names.size() == 1 ? "" : "s") + " (" + list + "), got " +
                      std::to_string(inputs.size()) + " (" + describe_inputs(inputs) + ")");
}

StreamRecipe stream_recipe_of(const Session& s) {
  StreamRecipe recipe;
  recipe.spec = *s.spec;
  recipe.dims = s.dims;
  recipe.seed = s.seed;
  recipe.samples = s.samples;
  recipe.policy.batch = s.stream_batch;  // the bucket edges' design, until a configuration's
  recipe.timed_batches = s.stream_timed_batches;
  return recipe;
}

Workload load_workload(const Session& s) {
  Workload w;
  w.model = s.source->load();
  if (auto* ep = w.model->as_exported())
    ep->set_compile_limits(within(s.compile_timeout_s, s.memory_cap_bytes));
  w.model->to(s.device);
  w.device = s.device;
  w.spec = s.spec;
  w.seed = s.seed;
  if (!s.dims.empty()) {
    w.stream_recipe = stream_recipe_of(s);
    w.inputs = typical_inputs(*w.stream_recipe, 1);
  } else {
    w.inputs = s.spec ? make_inputs(*s.spec, 1, s.seed) : s.file_inputs;
  }
  for (auto& v : w.inputs) v = v.toTensor().to(s.device);
  check_input_count(*w.model, w.inputs, s.source->name());
  return w;
}

}  // namespace torchperf

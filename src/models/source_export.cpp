#include "torchperf/models/source_export.h"

#include <torch/csrc/jit/serialization/pickle.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "torchperf/error.h"
#include "torchperf/feed/feed_json.h"
#include "torchperf/feed/inputs.h"
#include "torchperf/feed/shape_stream.h"
#include "torchperf/models/python_side.h"
#include "torchperf/process/scratch_dir.h"

namespace torchperf {

namespace {

namespace fs = std::filesystem;

void check_callable(const std::string& callable) {
  const auto colon = callable.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == callable.size())
    throw UsageError("--from-python '" + callable +
                     "': expected MODULE:CALLABLE (e.g. mymodels:Net, importable from here)");
}

// The example inputs at batch 2 (export specialises a size of 1), as a torch.save tuple; a named
// dimension at its median size, but never 1 (specialised) nor 2 (the batch's: torch.export would
// take two dimensions of one size for one symbol).
fs::path write_example(const InputSpec& inputs, const std::vector<NamedDim>& dims) {
  const fs::path example = scratch_path("example-inputs.pt");
  auto sizes = typical_sizes(dims, 0);
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i].second <= 2) sizes[i].second = std::min<std::int64_t>(3, dims[i].distribution.max);
  std::vector<c10::IValue> tensors;
  for (const auto& v : make_inputs(dims.empty() ? inputs : with_sizes(inputs, sizes), 2, 0))
    tensors.push_back(v);
  const auto bytes = torch::jit::pickle_save(c10::ivalue::Tuple::create(tensors));
  std::ofstream out(example, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return example;
}

nlohmann::json run_source_step(const SourceExport& request, const CommandLimits& limits,
                               bool explain) {
  check_callable(request.callable);
  std::vector<NamedDim> given;
  for (const auto& d : request.dims) given.push_back(parse_dim_option(d));
  const std::vector<NamedDim> dims = dims_for(request.inputs.named_dims(), given);
  const fs::path example = write_example(request.inputs, dims);
  PythonStep step;
  step.module = "torchperf.export_source";
  step.args = {request.callable, example.string(), explain ? "-" : request.out_path};
  // The feed tells the Python side the arguments its entries name, where named dimensions lie and
  // the range each is exported over.
  step.args.insert(step.args.end(), {"--feed", feed_json(request.inputs, dims).dump()});
  if (request.static_batch) step.args.push_back("--static-batch");
  if (explain) step.args.push_back("--explain");
  step.limits = limits;
  step.what = (explain ? "tracing '" + request.callable + "' with torch._dynamo.explain"
                       : "exporting '" + request.callable + "' with torch.export");
  std::error_code ec;
  try {
    nlohmann::json answer = run_python_step(step);
    fs::remove(example, ec);
    return answer;
  } catch (...) {
    fs::remove(example, ec);
    throw;
  }
}

}  // namespace

void export_from_python(const SourceExport& request, const CommandLimits& limits) {
  check_callable(request.callable);
  std::error_code ec;
  if (const fs::path parent = fs::path(request.out_path).parent_path(); !parent.empty())
    fs::create_directories(parent, ec);
  run_source_step(request, limits, false);
}

GraphBreakReport explain_from_python(const SourceExport& request, const CommandLimits& limits) {
  const nlohmann::json answer = run_source_step(request, limits, true);
  GraphBreakReport report;
  report.graphs = answer.value("graphs", 0);
  report.graph_breaks = answer.value("graph_breaks", 0);
  for (const auto& b : answer.value("breaks", nlohmann::json::array()))
    report.breaks.push_back({b.value("reason", ""), b.value("hint", ""), b.value("where", "")});
  return report;
}

}  // namespace torchperf

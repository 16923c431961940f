#include "torchperf/models/source_export.h"

#include <torch/csrc/jit/serialization/pickle.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "torchperf/error.h"
#include "torchperf/models/inputs.h"
#include "torchperf/models/python_side.h"

namespace torchperf {

void export_from_python(const SourceExport& request, const CommandLimits& limits) {
  const auto colon = request.callable.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == request.callable.size())
    throw UsageError("--from-python '" + request.callable +
                     "': expected MODULE:CALLABLE (e.g. mymodels:Net, importable from here)");
  namespace fs = std::filesystem;
  const fs::path example =
      fs::temp_directory_path() / ("torchperf-example-" + std::to_string(::getpid()) + ".pt");
  {
    std::vector<c10::IValue> tensors;
    for (const auto& v : make_inputs(request.inputs, 2, 0)) tensors.push_back(v);
    const auto bytes = torch::jit::pickle_save(c10::ivalue::Tuple::create(tensors));
    std::ofstream out(example, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::error_code ec;
  if (const fs::path parent = fs::path(request.out_path).parent_path(); !parent.empty())
    fs::create_directories(parent, ec);
  PythonStep step;
  step.module = "torchperf.export_source";
  step.args = {request.callable, example.string(), request.out_path};
  if (request.static_batch) step.args.push_back("--static-batch");
  step.limits = limits;
  step.what = "exporting '" + request.callable + "' with torch.export";
  try {
    run_python_step(step);
  } catch (...) {
    fs::remove(example, ec);
    throw;
  }
  fs::remove(example, ec);
}

}  // namespace torchperf

// The runtimes, one definition each (internal to the runtime part: others ask runtimes()).
#pragma once

#include "torchperf/runtime/runtime.h"

namespace torchperf {

const Runtime& torchscript_runtime();
const Runtime& aoti_runtime();
const Runtime& python_eager_runtime();
const Runtime& python_compile_runtime();
const Runtime& python_aoti_runtime();
const Runtime& onnxruntime_runtime();
const Runtime& openvino_runtime();
// An AOTInductor package of the program, as both the C++ and the Python loader run it.
Artefact aoti_package_artefact(const std::string& graph, const std::string& precision,
                               const WorkloadTraits& view);

}  // namespace torchperf

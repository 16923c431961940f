// The four runtimes, one definition each (internal to the runtime part: others ask runtimes()).
#pragma once

#include "torchperf/runtime/runtime.h"

namespace torchperf {

const Runtime& torchscript_runtime();
const Runtime& aoti_runtime();
const Runtime& python_eager_runtime();
const Runtime& python_compile_runtime();

}  // namespace torchperf

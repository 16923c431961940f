// A protocol datatype as a torch dtype and back (internal to serve: the model runner and the load
// generator's real samples share it).
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "torchperf/serve/inference_request.h"

namespace torchperf {

at::ScalarType torch_type(WireType type);
// WorkloadError naming `what` for a dtype the protocol cannot carry.
WireType wire_type_of(at::ScalarType type, const std::string& what);

}  // namespace torchperf

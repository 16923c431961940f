// The JSON "data" of a tensor, flat in row-major order, as the protocol carries it in requests
// and responses (internal: the request and response encoders share it).
#pragma once

#include <nlohmann/json.hpp>

#include "torchperf/serve/inference_request.h"

namespace torchperf {

// std::invalid_argument for FP16 and BF16, which go as binary data only.
nlohmann::json json_data(const WireTensor& tensor);

// A tensor's entry in a request's "inputs" or a response's "outputs": its name, datatype and
// shape, then its values as JSON "data", or (binary, and always for 16-bit floats, which JSON
// cannot hold) its size as binary_data_size with the bytes appended to `raw`.
nlohmann::json tensor_entry(const WireTensor& tensor, bool binary, std::string& raw);

}  // namespace torchperf

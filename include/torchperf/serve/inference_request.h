// The body of POST /v2/models/NAME/infer in the open inference protocol (KServe v2, Triton),
// read into tensors of raw bytes: JSON data, or the binary-data extension's raw tensors after the
// JSON header (so that images do not travel as JSON numbers). Every way a body can be wrong is a
// RequestError naming the input and what was expected; the server answers it with 400.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace torchperf {

class RequestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The protocol's datatypes this server takes, with their element sizes. FP16 and BF16 come as
// binary data only (JSON has no 16-bit floats).
enum class WireType { kBool, kUint8, kInt8, kInt16, kInt32, kInt64, kFp16, kBf16, kFp32, kFp64 };
// "FP32" → kFp32; RequestError naming the accepted ones otherwise (BYTES included: not taken).
WireType parse_wire_type(const std::string& name);
std::string to_string(WireType type);
std::size_t element_size(WireType type);

struct WireTensor {
  std::string name;
  WireType type = WireType::kFp32;
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> bytes;  // row-major, little-endian, element_size(type) each
};

struct InferenceRequest {
  std::string id;  // echoed in the response; may be empty
  std::vector<WireTensor> inputs;
  std::vector<std::string> outputs;  // names asked for; empty: all
  bool binary_outputs = false;       // every output asked for as binary data
};

// `body` is the whole request body; `json_length` the Inference-Header-Content-Length header when
// present (the binary-data extension), which says where the JSON ends and the raw tensors begin.
InferenceRequest parse_inference_request(std::string_view body,
                                         std::optional<std::size_t> json_length);

// A request body, as a client sends it: the inputs as JSON data, or (binary) as raw tensors after
// the JSON header, whose length goes in the Inference-Header-Content-Length header.
struct EncodedRequest {
  std::string body;
  std::optional<std::size_t> json_length;
};
EncodedRequest encode_inference_request(const std::vector<WireTensor>& inputs, bool binary,
                                        bool binary_outputs);

}  // namespace torchperf

// What the server answers in the open inference protocol (KServe v2, Triton): an inference
// response with JSON data or binary outputs, the model's metadata, and the error body every
// refused request gets ({"error": "…"}, as the protocol has it).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/serve/inference_request.h"

namespace torchperf {

struct EncodedResponse {
  std::string body;
  // With binary outputs: the JSON header's length, for the Inference-Header-Content-Length
  // header (the raw tensors follow it in output order).
  std::optional<std::size_t> json_length;
};

EncodedResponse encode_inference_response(const std::string& model_name, const std::string& id,
                                          const std::vector<WireTensor>& outputs, bool binary);

// A tensor as the metadata describes it: -1 for a size that varies (the batch).
struct WireTensorSpec {
  std::string name;
  WireType type = WireType::kFp32;
  std::vector<std::int64_t> shape;  // -1 where a size varies: the batch, a named dimension
  // Per dimension, the longest size a varying one takes (a named dimension's --dim MAX): a
  // request past it is refused. Empty, or 0 for a dimension: no limit.
  std::vector<std::int64_t> longest = {};
  // The same for the shortest (the --dim's MIN), and each dimension's name ("" for none): inputs
  // that share a name must agree in its size.
  std::vector<std::int64_t> shortest = {};
  std::vector<std::string> dims = {};
  // The values the model is fed, [low, high), where its input spec says (`@0..30522` token ids,
  // `@1..2` a mask of ones): the metadata carries them (as "torchperf_values") so that `load`
  // sends ids of the vocabulary, not zeros (issue 84). Empty: not said.
  std::vector<double> values = {};
};

// GET /v2/models/NAME: the name, its one version, the platform and the tensors.
std::string encode_model_metadata(const std::string& model_name,
                                  const std::vector<WireTensorSpec>& inputs,
                                  const std::vector<WireTensorSpec>& outputs);

// GET /v2/models/NAME's answer read back (the load generator's side). RequestError naming what
// is missing or malformed.
struct ModelMetadata {
  std::string name;
  std::vector<WireTensorSpec> inputs;
  std::vector<WireTensorSpec> outputs;
};
ModelMetadata parse_model_metadata(const std::string& body);

// {"error": message}
std::string encode_error(const std::string& message);

// NaN and Inf values in a floating-point output (0 for integer types). JSON has no way to carry
// them (they would go out as null), and a client has no use for them: the server refuses such an
// answer with the reason instead.
std::size_t count_nonfinite(const WireTensor& tensor);

}  // namespace torchperf

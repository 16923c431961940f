#include "torchperf/serve/inference_response.h"

#include <cstring>
#include <stdexcept>
#include <nlohmann/json.hpp>

namespace torchperf {
namespace {

using nlohmann::json;

template <typename T>
json values(const WireTensor& t) {
  json data = json::array();
  const std::size_t n = t.bytes.size() / sizeof(T);
  for (std::size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, t.bytes.data() + i * sizeof(T), sizeof(T));
    data.push_back(v);
  }
  return data;
}

// JSON data, flat in row-major order, as the protocol's responses carry it.
json data_of(const WireTensor& t) {
  switch (t.type) {
    case WireType::kBool: {
      json data = json::array();
      for (const auto b : t.bytes) data.push_back(b != 0);
      return data;
    }
    case WireType::kUint8:
      return values<std::uint8_t>(t);
    case WireType::kInt8:
      return values<std::int8_t>(t);
    case WireType::kInt16:
      return values<std::int16_t>(t);
    case WireType::kInt32:
      return values<std::int32_t>(t);
    case WireType::kInt64:
      return values<std::int64_t>(t);
    case WireType::kFp32:
      return values<float>(t);
    case WireType::kFp64:
      return values<double>(t);
    case WireType::kFp16:
    case WireType::kBf16:
      break;
  }
  throw std::invalid_argument("encode_inference_response: " + to_string(t.type) +
                              " outputs go as binary data only");
}

json spec_json(const TensorSpec& s) {
  return {{"name", s.name}, {"datatype", to_string(s.type)}, {"shape", s.shape}};
}

}  // namespace

EncodedResponse encode_inference_response(const std::string& model_name, const std::string& id,
                                          const std::vector<WireTensor>& outputs, bool binary) {
  json j = {{"model_name", model_name}, {"model_version", "1"}};
  if (!id.empty()) j["id"] = id;
  j["outputs"] = json::array();
  std::string raw;
  for (const auto& t : outputs) {
    json o = {{"name", t.name}, {"datatype", to_string(t.type)}, {"shape", t.shape}};
    // 16-bit floats have no JSON form: they go as binary even when JSON was asked for.
    if (binary || t.type == WireType::kFp16 || t.type == WireType::kBf16) {
      o["parameters"] = {{"binary_data_size", t.bytes.size()}};
      raw.append(t.bytes.begin(), t.bytes.end());
    } else {
      o["data"] = data_of(t);
    }
    j["outputs"].push_back(std::move(o));
  }
  EncodedResponse r;
  r.body = j.dump();
  if (!raw.empty() || binary) {
    r.json_length = r.body.size();
    r.body += raw;
  }
  return r;
}

std::string encode_model_metadata(const std::string& model_name,
                                  const std::vector<TensorSpec>& inputs,
                                  const std::vector<TensorSpec>& outputs) {
  json j = {{"name", model_name},
            {"versions", {"1"}},
            {"platform", "pytorch_libtorch"},
            {"inputs", json::array()},
            {"outputs", json::array()}};
  for (const auto& s : inputs) j["inputs"].push_back(spec_json(s));
  for (const auto& s : outputs) j["outputs"].push_back(spec_json(s));
  return j.dump();
}

std::string encode_error(const std::string& message) { return json{{"error", message}}.dump(); }

}  // namespace torchperf

#include "torchperf/serve/inference_response.h"

#include "wire_data.h"

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

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

}  // namespace

json json_data(const WireTensor& t) {
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
                              " tensors go as binary data only");
}

json tensor_entry(const WireTensor& t, bool binary, std::string& raw) {
  json entry = {{"name", t.name}, {"datatype", to_string(t.type)}, {"shape", t.shape}};
  if (binary || t.type == WireType::kFp16 || t.type == WireType::kBf16) {
    entry["parameters"] = {{"binary_data_size", t.bytes.size()}};
    raw.append(t.bytes.begin(), t.bytes.end());
  } else {
    entry["data"] = json_data(t);
  }
  return entry;
}

namespace {

json spec_json(const WireTensorSpec& s) {
  json j = {{"name", s.name}, {"datatype", to_string(s.type)}, {"shape", s.shape}};
  // Not the protocol's: clients that do not know it ignore it.
  if (s.values.size() == 2) j["torchperf_values"] = s.values;
  return j;
}

}  // namespace

EncodedResponse encode_inference_response(const std::string& model_name, const std::string& id,
                                          const std::vector<WireTensor>& outputs, bool binary) {
  json j = {{"model_name", model_name}, {"model_version", "1"}};
  if (!id.empty()) j["id"] = id;
  j["outputs"] = json::array();
  std::string raw;
  for (const auto& t : outputs) j["outputs"].push_back(tensor_entry(t, binary, raw));
  EncodedResponse r;
  r.body = j.dump();
  if (!raw.empty() || binary) {
    r.json_length = r.body.size();
    r.body += raw;
  }
  return r;
}

std::string encode_model_metadata(const std::string& model_name,
                                  const std::vector<WireTensorSpec>& inputs,
                                  const std::vector<WireTensorSpec>& outputs) {
  json j = {{"name", model_name},
            {"versions", {"1"}},
            {"platform", "pytorch_libtorch"},
            {"inputs", json::array()},
            {"outputs", json::array()}};
  for (const auto& s : inputs) j["inputs"].push_back(spec_json(s));
  for (const auto& s : outputs) j["outputs"].push_back(spec_json(s));
  return j.dump();
}

namespace {

std::vector<WireTensorSpec> read_specs(const json& j, const char* field) {
  if (!j.contains(field) || !j.at(field).is_array())
    throw RequestError(std::string("model metadata without \"") + field + "\"");
  std::vector<WireTensorSpec> specs;
  for (const json& t : j.at(field)) {
    if (!t.is_object() || !t.contains("name") || !t.contains("datatype") || !t.contains("shape"))
      throw RequestError(std::string("model metadata: an entry of \"") + field +
                         "\" lacks name, datatype or shape");
    specs.push_back({t.at("name").get<std::string>(),
                     parse_wire_type(t.at("datatype").get<std::string>()),
                     t.at("shape").get<std::vector<std::int64_t>>()});
    if (t.contains("torchperf_values") && t.at("torchperf_values").is_array() &&
        t.at("torchperf_values").size() == 2)
      specs.back().values = t.at("torchperf_values").get<std::vector<double>>();
  }
  return specs;
}

}  // namespace

ModelMetadata parse_model_metadata(const std::string& body) {
  try {
    const json j = json::parse(body);
    if (!j.is_object() || !j.contains("name") || !j.at("name").is_string())
      throw RequestError("model metadata without a \"name\"");
    return {j.at("name").get<std::string>(), read_specs(j, "inputs"), read_specs(j, "outputs")};
  } catch (const json::exception& e) {
    throw RequestError(std::string("model metadata is not the protocol's: ") + e.what());
  }
}

std::string encode_error(const std::string& message) { return json{{"error", message}}.dump(); }

std::size_t count_nonfinite(const WireTensor& tensor) {
  const std::size_t size = element_size(tensor.type);
  std::size_t count = 0;
  for (std::size_t at = 0; at + size <= tensor.bytes.size(); at += size) {
    const std::uint8_t* p = tensor.bytes.data() + at;
    switch (tensor.type) {
      case WireType::kFp32: {
        float v;
        std::memcpy(&v, p, sizeof v);
        count += !std::isfinite(v);
        break;
      }
      case WireType::kFp64: {
        double v;
        std::memcpy(&v, p, sizeof v);
        count += !std::isfinite(v);
        break;
      }
      case WireType::kFp16: {  // exponent bits all ones: Inf or NaN
        const std::uint16_t bits = static_cast<std::uint16_t>(p[0] | (p[1] << 8));
        count += (bits & 0x7C00u) == 0x7C00u;
        break;
      }
      case WireType::kBf16: {
        const std::uint16_t bits = static_cast<std::uint16_t>(p[0] | (p[1] << 8));
        count += (bits & 0x7F80u) == 0x7F80u;
        break;
      }
      default:
        return 0;
    }
  }
  return count;
}

}  // namespace torchperf

#include "torchperf/serve/inference_request.h"

#include "wire_data.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

namespace torchperf {
namespace {

using nlohmann::json;

// The most elements one input may have: far above any model input, below what would overflow.
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 32;

struct TypeInfo {
  WireType type;
  const char* name;
  std::size_t size;
};

constexpr TypeInfo kTypes[] = {{WireType::kBool, "BOOL", 1},   {WireType::kUint8, "UINT8", 1},
                               {WireType::kInt8, "INT8", 1},   {WireType::kInt16, "INT16", 2},
                               {WireType::kInt32, "INT32", 4}, {WireType::kInt64, "INT64", 8},
                               {WireType::kFp16, "FP16", 2},   {WireType::kBf16, "BF16", 2},
                               {WireType::kFp32, "FP32", 4},   {WireType::kFp64, "FP64", 8}};

const TypeInfo& info(WireType type) {
  for (const auto& t : kTypes)
    if (t.type == type) return t;
  return kTypes[0];
}

template <typename T>
void append(std::vector<std::uint8_t>& out, T value) {
  const auto at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

// Integers must fit the type: a UINT8 of 300 is the client's mistake, not something to wrap.
template <typename T>
void append_integer(std::vector<std::uint8_t>& out, const json& v, const std::string& where) {
  if (!v.is_number_integer())
    throw RequestError(fmt::format("{}: expected an integer, got {}", where, v.dump()));
  const bool fits =
      v.is_number_unsigned()
          ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())
          : v.get<std::int64_t>() >= std::numeric_limits<T>::min() &&
                v.get<std::int64_t>() <= std::numeric_limits<T>::max();
  if (!fits) throw RequestError(fmt::format("{}: {} does not fit the datatype", where, v.dump()));
  append<T>(out, static_cast<T>(v.get<std::int64_t>()));
}

void append_value(std::vector<std::uint8_t>& out, WireType type, const json& v,
                  const std::string& where) {
  switch (type) {
    case WireType::kBool:
      if (!v.is_boolean())
        throw RequestError(fmt::format("{}: expected true or false, got {}", where, v.dump()));
      append<std::uint8_t>(out, v.get<bool>() ? 1 : 0);
      return;
    case WireType::kUint8:
      return append_integer<std::uint8_t>(out, v, where);
    case WireType::kInt8:
      return append_integer<std::int8_t>(out, v, where);
    case WireType::kInt16:
      return append_integer<std::int16_t>(out, v, where);
    case WireType::kInt32:
      return append_integer<std::int32_t>(out, v, where);
    case WireType::kInt64:
      return append_integer<std::int64_t>(out, v, where);
    case WireType::kFp32:
    case WireType::kFp64:
      if (!v.is_number())
        throw RequestError(fmt::format("{}: expected a number, got {}", where, v.dump()));
      if (type == WireType::kFp32) {
        // A double beyond FP32's range would become Inf in the model, and its answer NaN.
        const double d = v.get<double>();
        if (std::fabs(d) > static_cast<double>(std::numeric_limits<float>::max()))
          throw RequestError(fmt::format("{}: {} overflows FP32 (largest {:g}); send FP64 if the "
                                         "model takes it",
                                         where, v.dump(), std::numeric_limits<float>::max()));
        append<float>(out, static_cast<float>(d));
      } else {
        append<double>(out, v.get<double>());
      }
      return;
    case WireType::kFp16:
    case WireType::kBf16:
      break;
  }
  throw RequestError(where + ": " + to_string(type) + " comes as binary data only");
}

// JSON data may be flat or nested as the shape; either way it is read in row-major order.
void flatten(const json& data, WireType type, const std::string& name,
             std::vector<std::uint8_t>& out, std::size_t& count) {
  if (data.is_array()) {
    for (const auto& item : data) flatten(item, type, name, out, count);
    return;
  }
  append_value(out, type, data, fmt::format("input '{}', value {}", name, count));
  ++count;
}

std::vector<std::int64_t> read_shape(const json& input, const std::string& name,
                                     std::uint64_t& elements) {
  if (!input.contains("shape") || !input.at("shape").is_array())
    throw RequestError(fmt::format("input '{}': expected \"shape\", an array of sizes", name));
  std::vector<std::int64_t> shape;
  elements = 1;
  for (const auto& d : input.at("shape")) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
      throw RequestError(fmt::format("input '{}': shape {} has {}, expected sizes of 0 or more",
                                     name, input.at("shape").dump(), d.dump()));
    shape.push_back(d.get<std::int64_t>());
    const auto size = static_cast<std::uint64_t>(shape.back());
    // Checked before multiplying: a product of large sizes would wrap around.
    if (size != 0 && elements > kMaxElements / size)
      throw RequestError(fmt::format("input '{}': shape {} has more than {} elements", name,
                                     input.at("shape").dump(), kMaxElements));
    elements *= size;
  }
  return shape;
}

std::optional<std::uint64_t> binary_size(const json& input, const std::string& name) {
  if (!input.contains("parameters")) return std::nullopt;
  const json& p = input.at("parameters");
  if (!p.is_object() || !p.contains("binary_data_size")) return std::nullopt;
  const json& size = p.at("binary_data_size");
  if (!size.is_number_unsigned())
    throw RequestError(
        fmt::format("input '{}': binary_data_size {} is not a byte count", name, size.dump()));
  return size.get<std::uint64_t>();
}

InferenceRequest read_request(const nlohmann::json& j, std::string_view body,
                              std::optional<std::size_t> json_length);

}  // namespace

WireType parse_wire_type(const std::string& name) {
  std::string known;
  for (const auto& t : kTypes) {
    if (name == t.name) return t.type;
    known += (known.empty() ? "" : ", ") + std::string(t.name);
  }
  throw RequestError("datatype '" + name + "': expected one of " + known);
}

std::string to_string(WireType type) { return info(type).name; }

std::size_t element_size(WireType type) { return info(type).size; }

InferenceRequest parse_inference_request(std::string_view body,
                                         std::optional<std::size_t> json_length) {
  if (json_length && *json_length > body.size())
    throw RequestError(
        fmt::format("Inference-Header-Content-Length {} is longer than the body ({} bytes)",
                    *json_length, body.size()));
  const std::string_view header = json_length ? body.substr(0, *json_length) : body;
  json j;
  try {
    j = json::parse(header.begin(), header.end());
  } catch (const json::parse_error& e) {
    throw RequestError(
        fmt::format("the request is not JSON (byte {}): expected an inference "
                    "request object",
                    e.byte));
  }
  try {
    return read_request(j, body, json_length);
  } catch (const json::exception& e) {  // a field of the wrong JSON type
    throw RequestError(std::string("the request does not follow the inference protocol: ") +
                       e.what());
  }
}

namespace {

InferenceRequest read_request(const json& j, std::string_view body,
                              std::optional<std::size_t> json_length) {
  if (!j.is_object()) throw RequestError("the request is not a JSON object");
  if (!j.contains("inputs") || !j.at("inputs").is_array() || j.at("inputs").empty())
    throw RequestError("the request has no \"inputs\": expected an array of tensors");
  InferenceRequest r;
  if (j.contains("id")) {
    if (!j.at("id").is_string()) throw RequestError("\"id\" must be a string");
    r.id = j.at("id").get<std::string>();
  }
  std::size_t offset = json_length.value_or(body.size());
  for (std::size_t i = 0; i < j.at("inputs").size(); ++i) {
    const json& input = j.at("inputs").at(i);
    if (!input.is_object() || !input.contains("name") || !input.at("name").is_string())
      throw RequestError(fmt::format("input {}: expected an object with a \"name\"", i));
    WireTensor t;
    t.name = input.at("name").get<std::string>();
    if (!input.contains("datatype") || !input.at("datatype").is_string())
      throw RequestError(fmt::format("input '{}': expected a \"datatype\" such as FP32", t.name));
    t.type = parse_wire_type(input.at("datatype").get<std::string>());
    std::uint64_t elements = 0;
    t.shape = read_shape(input, t.name, elements);
    const auto binary = binary_size(input, t.name);
    if (binary && input.contains("data"))
      throw RequestError(fmt::format("input '{}': both \"data\" and binary_data_size", t.name));
    const std::uint64_t bytes = elements * element_size(t.type);
    if (binary) {
      if (!json_length)
        throw RequestError(
            fmt::format("input '{}': binary data without the "
                        "Inference-Header-Content-Length header",
                        t.name));
      if (*binary != bytes)
        throw RequestError(fmt::format(
            "input '{}': {} {} of shape {} is {} bytes, "
            "binary_data_size says {}",
            t.name, elements, to_string(t.type), input.at("shape").dump(), bytes, *binary));
      if (body.size() - offset < bytes)
        throw RequestError(fmt::format("input '{}': the body ends {} bytes into its {} bytes",
                                       t.name, body.size() - offset, bytes));
      t.bytes.assign(body.begin() + static_cast<std::ptrdiff_t>(offset),
                     body.begin() + static_cast<std::ptrdiff_t>(offset + bytes));
      offset += bytes;
    } else {
      if (!input.contains("data"))
        throw RequestError(
            fmt::format("input '{}': expected \"data\" or binary_data_size", t.name));
      // Not reserved from the shape: a shape may claim far more than the data holds.
      std::size_t count = 0;
      flatten(input.at("data"), t.type, t.name, t.bytes, count);
      if (count != elements)
        throw RequestError(fmt::format("input '{}': shape {} needs {} values, \"data\" has {}",
                                       t.name, input.at("shape").dump(), elements, count));
    }
    r.inputs.push_back(std::move(t));
  }
  if (offset != body.size())
    throw RequestError(fmt::format("{} bytes after the last binary input", body.size() - offset));
  const auto wants_binary = [](const json& holder) {
    return holder.is_object() && holder.contains("parameters") &&
           holder.at("parameters").is_object() &&
           holder.at("parameters").value("binary_data", false);
  };
  if (j.contains("outputs")) {
    if (!j.at("outputs").is_array())
      throw RequestError("\"outputs\": expected an array of {\"name\": …}");
    for (const json& o : j.at("outputs")) {
      if (!o.is_object() || !o.contains("name") || !o.at("name").is_string())
        throw RequestError("\"outputs\": expected objects with a \"name\"");
      r.outputs.push_back(o.at("name").get<std::string>());
      r.binary_outputs = r.binary_outputs || wants_binary(o);
    }
  }
  if (j.contains("parameters") && j.at("parameters").is_object())
    r.binary_outputs = r.binary_outputs || j.at("parameters").value("binary_data_output", false);
  return r;
}

}  // namespace

EncodedRequest encode_inference_request(const std::vector<WireTensor>& inputs, bool binary,
                                        bool binary_outputs) {
  json j = {{"inputs", json::array()}};
  std::string raw;
  for (const auto& t : inputs) j["inputs"].push_back(tensor_entry(t, binary, raw));
  if (binary_outputs) j["parameters"] = {{"binary_data_output", true}};
  EncodedRequest r;
  r.body = j.dump();
  if (!raw.empty()) {
    r.json_length = r.body.size();
    r.body += raw;
  }
  return r;
}

}  // namespace torchperf

#include "torchperf/serve/inference_request.h"

#include <gtest/gtest.h>

#include <cstring>
#include <utility>

namespace torchperf {
namespace {

template <typename T>
std::vector<T> values_of(const WireTensor& t) {
  std::vector<T> v(t.bytes.size() / sizeof(T));
  std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

std::string error_of(std::string_view body, std::optional<std::size_t> json_length = {}) {
  try {
    parse_inference_request(body, json_length);
  } catch (const RequestError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(InferenceRequestTest, JsonDataIsReadInRowMajorOrderFlatOrNested) {
  const auto r = parse_inference_request(R"({"id": "r1",
      "inputs": [{"name": "x", "shape": [2, 3], "datatype": "FP32",
                  "data": [[1, 2, 3], [4, 5, 6.5]]},
                 {"name": "ids", "shape": [3], "datatype": "INT64", "data": [7, -8, 9]}],
      "outputs": [{"name": "logits"}]})",
                                         std::nullopt);
  EXPECT_EQ(r.id, "r1");
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.inputs[0].shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(values_of<float>(r.inputs[0]), (std::vector<float>{1, 2, 3, 4, 5, 6.5}));
  EXPECT_EQ(values_of<std::int64_t>(r.inputs[1]), (std::vector<std::int64_t>{7, -8, 9}));
  EXPECT_EQ(r.outputs, (std::vector<std::string>{"logits"}));
  EXPECT_FALSE(r.binary_outputs);
}

TEST(InferenceRequestTest, BinaryTensorsFollowTheJsonHeaderInInputOrder) {
  const std::string header = R"({"inputs": [
      {"name": "image", "shape": [1, 2], "datatype": "FP32", "parameters": {"binary_data_size": 8}},
      {"name": "mask", "shape": [3], "datatype": "UINT8", "parameters": {"binary_data_size": 3}}],
      "outputs": [{"name": "y", "parameters": {"binary_data": true}}]})";
  const float pixels[2] = {0.25f, -1.5f};
  std::string body = header;
  body.append(reinterpret_cast<const char*>(pixels), sizeof(pixels));
  body += std::string("\x01\x02\xff", 3);
  const auto r = parse_inference_request(body, header.size());
  EXPECT_EQ(values_of<float>(r.inputs[0]), (std::vector<float>{0.25f, -1.5f}));
  EXPECT_EQ(r.inputs[1].bytes, (std::vector<std::uint8_t>{1, 2, 255}));
  EXPECT_TRUE(r.binary_outputs);
}

TEST(InferenceRequestTest, EachMalformedBodyIsARequestErrorSayingWhatWasExpected) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"inputs": [)", "not JSON (byte"},
      {"[1, 2]", "not a JSON object"},
      {R"({"inputs": []})", "no \"inputs\""},
      {R"({"inputs": [{"name": "x", "shape": [2, 3], "datatype": "FP32", "data": [1, 2, 3, 4, 5]}]})",
       "input 'x': shape [2,3] needs 6 values, \"data\" has 5"},
      {R"({"inputs": [{"name": "x", "shape": [1], "datatype": "BYTES", "data": ["a"]}]})",
       "datatype 'BYTES': expected one of BOOL"},
      {R"({"inputs": [{"name": "m", "shape": [2], "datatype": "UINT8", "data": [1, 300]}]})",
       "input 'm', value 1: 300 does not fit"},
      {R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": ["one"]}]})",
       "expected a number"},
      {R"({"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1, 1e300]}]})",
       "input 'x', value 1: 1e+300 overflows FP32"},
      {"", "not JSON (byte 1)"},
      {R"({"inputs": [{"name": "x", "shape": [-1], "datatype": "FP32", "data": []}]})",
       "sizes of 0 or more"},
      {R"({"inputs": [{"name": "x", "shape": [3, 4611686018427387904], "datatype": "FP32",
           "data": [1]}]})",
       "more than 4294967296 elements"},
      {R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP16", "data": [1]}]})",
       "binary data only"},
      {R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32"}]})",
       "expected \"data\" or binary_data_size"},
      {R"({"inputs": [{"shape": [1], "datatype": "FP32", "data": [1]}]})",
       "input 0: expected an object with a \"name\""},
      {R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}],
           "outputs": [{"name": "y", "parameters": {"binary_data": "yes"}}]})",
       "does not follow the inference protocol"},
  };
  for (const auto& [body, expected] : cases) {
    const std::string message = error_of(body);
    EXPECT_NE(message.find(expected), std::string::npos) << body << "\n -> " << message;
  }
}

TEST(InferenceRequestTest, BinaryBodiesThatDoNotAddUpAreRefused) {
  const std::string header = R"({"inputs": [
      {"name": "x", "shape": [4], "datatype": "FP32", "parameters": {"binary_data_size": 16}}]})";
  const std::string truncated = header + std::string(10, '\0');
  EXPECT_NE(error_of(truncated, header.size()).find("the body ends 10 bytes into its 16"),
            std::string::npos)
      << error_of(truncated, header.size());
  const std::string extra = header + std::string(20, '\0');
  EXPECT_NE(error_of(extra, header.size()).find("4 bytes after the last binary input"),
            std::string::npos);
  EXPECT_NE(error_of(header, header.size() + 5).find("longer than the body"), std::string::npos);
  EXPECT_NE(error_of(header + std::string(16, '\0'))
                .find("binary data without the Inference-Header-Content-Length header"),
            std::string::npos);
  const std::string wrong_size = R"({"inputs": [
      {"name": "x", "shape": [4], "datatype": "FP32", "parameters": {"binary_data_size": 12}}]})";
  EXPECT_NE(error_of(wrong_size + std::string(12, '\0'), wrong_size.size())
                .find("is 16 bytes, binary_data_size says 12"),
            std::string::npos);
}

TEST(InferenceRequestTest, DatatypesHaveTheirProtocolNamesAndSizes) {
  EXPECT_EQ(parse_wire_type("INT64"), WireType::kInt64);
  EXPECT_EQ(element_size(WireType::kBf16), 2u);
  EXPECT_EQ(to_string(WireType::kFp64), "FP64");
}

}  // namespace torchperf

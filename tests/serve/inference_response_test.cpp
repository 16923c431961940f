#include "torchperf/serve/inference_response.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

namespace torchperf {
namespace {

WireTensor floats(const std::string& name, std::vector<std::int64_t> shape,
                  const std::vector<float>& v) {
  WireTensor t;
  t.name = name;
  t.type = WireType::kFp32;
  t.shape = std::move(shape);
  t.bytes.resize(v.size() * sizeof(float));
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

}  // namespace

TEST(InferenceResponseTest, JsonOutputsCarryTheirDataFlatAndTheRequestId) {
  const auto r =
      encode_inference_response("r18", "req-7", {floats("y", {2, 2}, {1, 2.5, -3, 4})}, false);
  EXPECT_FALSE(r.json_length);
  const auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j.at("model_name"), "r18");
  EXPECT_EQ(j.at("id"), "req-7");
  const auto& y = j.at("outputs").at(0);
  EXPECT_EQ(y.at("datatype"), "FP32");
  EXPECT_EQ(y.at("shape"), nlohmann::json({2, 2}));
  EXPECT_EQ(y.at("data"), nlohmann::json({1.0, 2.5, -3.0, 4.0}));
}

TEST(InferenceResponseTest, BinaryOutputsFollowTheJsonHeaderInOutputOrder) {
  const auto r = encode_inference_response(
      "m", "", {floats("a", {3}, {0.5f, 1, 2}), floats("b", {1}, {-7})}, true);
  ASSERT_TRUE(r.json_length);
  const auto header = nlohmann::json::parse(r.body.substr(0, *r.json_length));
  EXPECT_FALSE(header.contains("id"));
  EXPECT_EQ(header.at("outputs").at(0).at("parameters").at("binary_data_size"), 12);
  EXPECT_EQ(r.body.size(), *r.json_length + 16);
  float b = 0;
  std::memcpy(&b, r.body.data() + *r.json_length + 12, sizeof(float));
  EXPECT_EQ(b, -7);
}

TEST(InferenceResponseTest, SixteenBitFloatsGoAsBinaryEvenInAJsonResponse) {
  WireTensor half;
  half.name = "h";
  half.type = WireType::kBf16;
  half.shape = {2};
  half.bytes = {0x80, 0x3f, 0x00, 0x40};  // 1.0 and 2.0 in bf16
  const auto r = encode_inference_response("m", "", {half}, false);
  ASSERT_TRUE(r.json_length);
  EXPECT_EQ(r.body.size(), *r.json_length + 4);
}

TEST(InferenceResponseTest, NonFiniteValuesAreCountedInEveryFloatingType) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(count_nonfinite(floats("y", {4}, {1, inf, std::nanf(""), -inf})), 3u);
  EXPECT_EQ(count_nonfinite(floats("y", {2}, {1, 3.4e38f})), 0u);
  WireTensor half{"h", WireType::kFp16, {3}, {0x00, 0x3C, 0x00, 0x7C, 0x00, 0xFE}};  // 1, Inf, NaN
  EXPECT_EQ(count_nonfinite(half), 2u);
  WireTensor bf16{"b", WireType::kBf16, {2}, {0x80, 0x3F, 0x80, 0x7F}};  // 1, Inf
  EXPECT_EQ(count_nonfinite(bf16), 1u);
  WireTensor ints{"i", WireType::kInt32, {1}, {0xFF, 0xFF, 0x80, 0x7F}};
  EXPECT_EQ(count_nonfinite(ints), 0u);
}

TEST(InferenceResponseTest, MetadataAndErrorsHaveTheProtocolsShape) {
  const auto m = nlohmann::json::parse(
      encode_model_metadata("r18", {{"input__0", WireType::kFp32, {-1, 3, 224, 224}}},
                            {{"output__0", WireType::kFp32, {-1, 1000}}}));
  EXPECT_EQ(m.at("name"), "r18");
  EXPECT_EQ(m.at("versions"), nlohmann::json({"1"}));
  EXPECT_EQ(m.at("inputs").at(0).at("shape"), nlohmann::json({-1, 3, 224, 224}));
  EXPECT_EQ(m.at("outputs").at(0).at("datatype"), "FP32");
  EXPECT_EQ(nlohmann::json::parse(encode_error("input 'x': bad")).at("error"), "input 'x': bad");
}

}  // namespace torchperf

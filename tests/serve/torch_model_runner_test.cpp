#include "torchperf/serve/torch_model_runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "torchperf/error.h"

namespace torchperf {
namespace {

BenchOptions mlp(const std::string& config = "") {
  BenchOptions o;
  o.model = "builtin:mlp";
  if (!config.empty()) o.config = Configuration::parse(config);
  return o;
}

InferenceRequest request_of(const ModelSignature& s, std::int64_t batch, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  InferenceRequest r;
  for (const auto& spec : s.inputs) {
    WireTensor t{spec.name, spec.type, spec.shape, {}};
    t.shape[0] = batch;
    std::size_t n = 1;
    for (auto d : t.shape) n *= static_cast<std::size_t>(d);
    std::vector<float> values(n);
    for (auto& v : values) v = normal(rng);
    t.bytes.resize(n * sizeof(float));
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    r.inputs.push_back(std::move(t));
  }
  return r;
}

std::vector<float> floats(const WireTensor& t) {
  std::vector<float> v(t.bytes.size() / sizeof(float));
  std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

TEST(TorchModelRunnerTest, TheSignatureComesFromTheInputSpecAndOneCall) {
  auto instances = load_model_instances(mlp(), 1);
  const ModelSignature& s = instances[0]->signature();
  ASSERT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.inputs[0].type, WireType::kFp32);
  EXPECT_EQ(s.inputs[0].shape[0], -1);
  ASSERT_EQ(s.outputs.size(), 1u);
  EXPECT_EQ(s.outputs[0].name, "output0");
  EXPECT_EQ(s.outputs[0].shape[0], -1);
}

TEST(TorchModelRunnerTest, ABatchOfRequestsGivesEachTheOutputsItWouldGetAlone) {
  auto instances = load_model_instances(mlp("mode=eval,grad=no_grad"), 1);
  ModelRunner& m = *instances[0];
  m.enter_thread();
  const InferenceRequest a = request_of(m.signature(), 1, 1);
  const InferenceRequest b = request_of(m.signature(), 3, 2);
  const auto together = m.run({&a, &b});
  const auto alone_a = m.run({&a});
  const auto alone_b = m.run({&b});
  m.exit_thread();
  ASSERT_EQ(together.size(), 2u);
  EXPECT_EQ(together[1][0].shape[0], 3);
  const auto ta = floats(together[0][0]), la = floats(alone_a[0][0]);
  const auto tb = floats(together[1][0]), lb = floats(alone_b[0][0]);
  ASSERT_EQ(ta.size(), la.size());
  ASSERT_EQ(tb.size(), lb.size());
  for (std::size_t i = 0; i < ta.size(); ++i) EXPECT_NEAR(ta[i], la[i], 1e-4);
  for (std::size_t i = 0; i < tb.size(); ++i) EXPECT_NEAR(tb[i], lb[i], 1e-4);
}

TEST(TorchModelRunnerTest, AReducedPrecisionModelTakesAndGivesFp32) {
  auto instances = load_model_instances(mlp("mode=eval,grad=inference,precision=bf16"), 1);
  ModelRunner& m = *instances[0];
  EXPECT_EQ(m.signature().inputs[0].type, WireType::kFp32);
  EXPECT_EQ(m.signature().outputs[0].type, WireType::kFp32);
  const InferenceRequest a = request_of(m.signature(), 2, 3);
  const auto out = m.run({&a});
  for (float v : floats(out[0][0])) EXPECT_TRUE(std::isfinite(v));
}

TEST(TorchModelRunnerTest, AChannelsLastConvolutionalModelIsFedItsFormat) {
  BenchOptions o;
  o.model = "builtin:convbn";
  o.config = Configuration::parse("mode=eval,grad=no_grad,format=channels_last");
  auto instances = load_model_instances(o, 1);
  o.config = Configuration::parse("mode=eval,grad=no_grad");
  auto plain = load_model_instances(o, 1);
  const InferenceRequest a = request_of(instances[0]->signature(), 2, 4);
  const auto x = floats(instances[0]->run({&a})[0][0]);
  const auto y = floats(plain[0]->run({&a})[0][0]);
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-3);
}

TEST(TorchModelRunnerTest, EachInstanceIsItsOwnCopy) {
  auto instances = load_model_instances(mlp(), 2);
  ASSERT_EQ(instances.size(), 2u);
  EXPECT_NE(instances[0].get(), instances[1].get());
  EXPECT_THROW(load_model_instances(mlp(), 0), UsageError);
}

TEST(TorchModelRunnerTest, AnInputSpecTheModelRejectsFailsAtLoadNamingTheInputs) {
  BenchOptions o = mlp();
  o.input_spec = "7";
  try {
    load_model_instances(o, 1);
    FAIL() << "loaded";
  } catch (const WorkloadError& e) {
    EXPECT_NE(std::string(e.what()).find("rejected its inputs"), std::string::npos) << e.what();
  }
}

TEST(TorchModelRunnerTest, TheWireFormOfASpecNamesItsInputsAndBatch) {
  const auto specs = wire_inputs(parse_input_spec("3x4;int64:7"));
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].shape, (std::vector<std::int64_t>{-1, 3, 4}));
  EXPECT_EQ(specs[1].type, WireType::kInt64);
  EXPECT_EQ(specs[1].name, "input1");
}

}  // namespace
}  // namespace torchperf

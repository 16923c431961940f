#include "torchperf/config/configuration.h"

#include <gtest/gtest.h>

#include "support/test_support.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

WorkloadTraits convnet_on_cpu() {
  WorkloadTraits t = testing::image_model_traits();
  t.cpu_fuser = true;  // the TensorExpr fuser is available here
  t.default_threads = 1;
  return t;
}

std::string config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(ConfigurationTest, PrintsKnobsInRegistryOrderWhateverTheInputOrder) {
  const auto c =
      Configuration::parse("graph=frozen-opt, precision=bf16-autocast,threads=2,grad=inference");
  EXPECT_EQ(c.to_string(), "threads=2,grad=inference,precision=bf16-autocast,graph=frozen-opt");
  EXPECT_EQ(Configuration::parse(c.to_string()).to_string(), c.to_string());
}

TEST(ConfigurationTest, TheEmptyStringIsTheEmptyConfiguration) {
  EXPECT_TRUE(Configuration::parse("").empty());
}

TEST(ConfigurationTest, RejectsUnknownKnobsAndValuesNamingWhatIsAccepted) {
  EXPECT_NE(config_error([] { Configuration::parse("turbo=on"); }).find("known knobs: runtime, threads"),
            std::string::npos);
  EXPECT_NE(
      config_error([] { Configuration::parse("precision=fp8"); }).find("expected one of fp32"),
      std::string::npos);
  EXPECT_NE(config_error([] { Configuration::parse("threads=0"); }).find("positive integer"),
            std::string::npos);
  EXPECT_NE(config_error([] { Configuration::parse("batch=99999999999"); })
                .find("knob 'batch': 99999999999 is too large"),
            std::string::npos);
  EXPECT_NE(config_error([] { Configuration::parse("threads"); }).find("knob=value"),
            std::string::npos);
  EXPECT_NE(config_error([] { Configuration::parse("grad=on,grad=no_grad"); }).find("twice"),
            std::string::npos);
}

TEST(ConfigurationTest, ResolvingFillsInTheBaselineAndMarksWhatDoesNotApply) {
  const auto r = resolve(Configuration::parse("grad=no_grad"), convnet_on_cpu());
  EXPECT_EQ(r.value("threads"), "1");
  EXPECT_EQ(r.value("grad"), "no_grad");
  EXPECT_TRUE(r.knob("grad").requested);
  EXPECT_FALSE(r.knob("threads").requested);
  EXPECT_EQ(r.value("precision"), "fp32");
  EXPECT_FALSE(r.knob("cudnn_benchmark").applicable);
  EXPECT_NE(r.knob("cudnn_benchmark").reason.find("CUDA"), std::string::npos);
  EXPECT_EQ(
      r.to_string(),
      "threads=1,batch=1,mode=eval,grad=no_grad,precision=fp32,format=contiguous,graph=eager");
}

TEST(ConfigurationTest, AKnobForcedWhereItDoesNotApplyIsAnError) {
  WorkloadTraits mlp;
  const std::string message =
      config_error([&] { resolve(Configuration::parse("format=channels_last"), mlp); });
  EXPECT_NE(message.find("format=channels_last does not apply"), std::string::npos);
  EXPECT_NE(message.find("convolutions"), std::string::npos);
  EXPECT_NE(
      config_error([&] { resolve(Configuration::parse("precision=fp16"), mlp); }).find("CUDA"),
      std::string::npos);
}

TEST(ConfigurationTest, FreezingAModelSavedInTrainingModeSwitchesItToEvalAndSaysSo) {
  WorkloadTraits t = convnet_on_cpu();
  t.saved_training = true;
  const auto r = resolve(Configuration::parse("graph=frozen"), t);
  EXPECT_EQ(r.value("mode"), "eval");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("using mode=eval"), std::string::npos);
}

TEST(ConfigurationTest, FreezingWithAnExplicitTrainModeIsAConflict) {
  EXPECT_NE(config_error([] {
              resolve(Configuration::parse("graph=frozen-opt,mode=train"), convnet_on_cpu());
            }).find("needs mode=eval"),
            std::string::npos);
}

TEST(ConfigurationTest, AGraphPerShapeOverAStreamOfMoreWidthsThanItRecompilesForIsRefused) {
  WorkloadTraits t = testing::image_program_traits();
  t.named_dims = {"S"};
  for (std::int64_t l = 10; l <= 450; l += 10) t.stream_batch_longest.push_back(l);
  t.stream_longest = 450;
  const std::string error = config_error([&] {
    resolve(Configuration::parse("runtime=python,graph=compile-static,padding=batch-max"), t);
  });
  EXPECT_NE(error.find("graph=compile-static"), std::string::npos) << error;
  EXPECT_NE(error.find("45 widths"), std::string::npos) << error;
  EXPECT_NO_THROW(
      resolve(Configuration::parse("runtime=python,graph=compile-static,padding=multiple:64"), t));
  EXPECT_NO_THROW(
      resolve(Configuration::parse("runtime=python,graph=compile-dynamic,padding=batch-max"), t));
}

TEST(ConfigurationTest, OnCudaTorchScriptsOptimizedGraphWithAutocastIsRefusedNamingThePair) {
  WorkloadTraits gpu = convnet_on_cpu();
  gpu.cuda = true;
  const std::string error = config_error([&] {
    resolve(Configuration::parse("graph=frozen-opt,precision=fp16-autocast"), gpu);
  });
  EXPECT_EQ(error.rfind("graph=frozen-opt with precision=fp16-autocast on CUDA: ", 0), 0u) << error;
  EXPECT_NO_THROW(resolve(Configuration::parse("graph=frozen,precision=fp16-autocast"), gpu));
  EXPECT_NO_THROW(resolve(Configuration::parse("graph=frozen-opt,precision=fp16"), gpu));
}

TEST(ConfigurationTest, ThreadCountsFarBeyondTheCoresAreRefused) {
  EXPECT_NE(config_error([] {
              resolve(Configuration::parse("threads=9"), convnet_on_cpu());
            }).find("4x the 2 usable cores"),
            std::string::npos);
  EXPECT_NO_THROW(resolve(Configuration::parse("threads=8"), convnet_on_cpu()));
}

TEST(ConfigurationTest, NamedConfigurationsAreBaselineAndCareful) {
  EXPECT_TRUE(named_or_parsed("baseline").empty());
  EXPECT_EQ(named_or_parsed("careful").to_string(), "mode=eval,grad=no_grad");
  EXPECT_EQ(named_or_parsed("threads=2").to_string(), "threads=2");
}

TEST(ConfigurationTest, BatchDoesNotApplyToInputsFromAFile) {
  WorkloadTraits t = convnet_on_cpu();
  t.inputs_from_file = true;
  t.default_batch = 2;
  EXPECT_FALSE(resolve(Configuration(), t).knob("batch").applicable);
  EXPECT_NE(config_error([&] { resolve(Configuration::parse("batch=8"), t); }).find("fixed at 2"),
            std::string::npos);
}

}  // namespace torchperf

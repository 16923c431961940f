// The runtime knob, and what the python runtime makes of the other knobs.
#include <gtest/gtest.h>

#include "support/test_support.h"
#include "torchperf/config/configuration.h"
#include "torchperf/config/knob.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

WorkloadTraits program() {
  WorkloadTraits t = testing::image_model_traits();
  t.torchscript = false;
  t.exported_program = true;
  t.can_train_mode = false;
  return t;
}

std::string config_error(const Configuration& c, const WorkloadTraits& t) {
  try {
    resolve(c, t);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(RuntimeKnobTest, UnderPythonTheGraphIsTorchCompileAndKnobsPythonDoesNotApplySayWhy) {
  const ResolvedConfiguration r =
      resolve(Configuration::parse("runtime=python,graph=compile,grad=inference"), program());
  EXPECT_EQ(r.value("runtime"), "python");
  EXPECT_EQ(r.value("graph"), "compile");
  EXPECT_EQ(r.value("grad"), "inference") << "a program's module() has autograd in Python";
  EXPECT_EQ(r.value("precision"), "fp32");
  EXPECT_TRUE(r.knob("format").applicable) << "channels_last is Python's too";
  EXPECT_TRUE(r.knob("allocator").applicable) << "preloaded into the Python worker too";
  for (const auto* name : {"pad", "conv_bias", "tf32", "omp_wait"}) {
    EXPECT_FALSE(r.knob(name).applicable) << name;
    EXPECT_NE(r.knob(name).reason.find("python runtime"), std::string::npos)
        << name << ": " << r.knob(name).reason;
  }
  EXPECT_EQ(find_knob("graph").values([] {
    WorkloadTraits t = program();
    t.python_runtime = true;
    return t;
  }()),
            (std::vector<std::string>{"eager", "compile", "compile-max-autotune"}));
}

TEST(RuntimeKnobTest, EachRuntimesValuesAreRefusedInTheOtherNamingWhatTheyNeed) {
  EXPECT_NE(config_error(Configuration::parse("graph=compile"), program()).find(
                "needs runtime=python"),
            std::string::npos);
  EXPECT_NE(config_error(Configuration::parse("runtime=python,graph=aoti"), program())
                .find("runtime=python runs graph=eager, compile or compile-max-autotune"),
            std::string::npos);
  EXPECT_NE(config_error(Configuration::parse("runtime=python,precision=bf16"), program())
                .find("autocast"),
            std::string::npos);
  WorkloadTraits neither = program();
  neither.exported_program = false;
  EXPECT_NE(config_error(Configuration::parse("runtime=python"), neither).find(
                "a torch.export program or a TorchScript model"),
            std::string::npos);
}

TEST(RuntimeKnobTest, AConfigurationThatDoesNotNameTheRuntimeKeepsItsName) {
  const ResolvedConfiguration cpp = resolve(Configuration::parse("threads=1"), program());
  EXPECT_EQ(cpp.value("runtime"), "cpp");
  EXPECT_EQ(cpp.to_string().find("runtime"), std::string::npos) << cpp.to_string();
  EXPECT_EQ(cpp.value("graph"), "aoti");
  const ResolvedConfiguration python =
      resolve(Configuration::parse("runtime=python"), program());
  EXPECT_NE(python.to_string().find("runtime=python"), std::string::npos);
  EXPECT_EQ(python.value("graph"), "eager");
}

TEST(RuntimeKnobTest, TwoRuntimesAreTwoProcessStates) {
  EXPECT_EQ(find_knob("runtime").scope, KnobScope::kWorker);
}

}  // namespace torchperf

// The runtime knob, and what the python runtime makes of the other knobs.
#include <gtest/gtest.h>

#include "support/test_support.h"
#include "torchperf/config/configuration.h"
#include "torchperf/config/knob.h"
#include "torchperf/error.h"
#include "torchperf/runtime/runtime.h"

namespace torchperf {
namespace {

WorkloadTraits program() { return testing::image_program_traits(); }
// A built-in: both forms.
WorkloadTraits builtin() { return testing::image_builtin_traits(); }

bool python_compile_captures(const WorkloadTraits& t) {
  return runtime_for("python", "compile-reduce-overhead", t)
             .captures_cuda_graphs("compile-reduce-overhead", t.cuda) &&
         !runtime_for("python", "compile", t).captures_cuda_graphs("compile", t.cuda);
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
  for (const auto* name : {"pad", "conv_bias", "qengine", "omp_wait"}) {
    EXPECT_FALSE(r.knob(name).applicable) << name;
    EXPECT_NE(r.knob(name).reason.find("python runtime"), std::string::npos)
        << name << ": " << r.knob(name).reason;
  }
  EXPECT_EQ(find_knob("graph").values(runtime_for("python", "", program()).view(program())),
            (std::vector<std::string>{"eager", "compile", "compile-max-autotune"}));
  WorkloadTraits gpu = program();
  gpu.cuda = true;
  EXPECT_EQ(find_knob("graph").values(runtime_for("python", "", gpu).view(gpu)),
            (std::vector<std::string>{"eager", "compile", "compile-reduce-overhead",
                                      "compile-max-autotune",
                                      "compile-max-autotune-no-cudagraphs"}));
}

TEST(RuntimeKnobTest, EachRuntimesValuesAreRefusedInTheOtherNamingWhatTheyNeed) {
  EXPECT_NE(config_error(Configuration::parse("graph=compile"), program()).find(
                "runtime=python"),
            std::string::npos);
  // A package runs in Python's loader only for a tune from Python (the caller's module given).
  EXPECT_NE(config_error(Configuration::parse("runtime=python,graph=aoti"), program())
                .find("runtime=python runs graph=eager or a torch.compile mode"),
            std::string::npos);
  EXPECT_NE(config_error(Configuration::parse("runtime=python,graph=aoti"), program())
                .find("for a tune started from Python"),
            std::string::npos);
  EXPECT_NE(config_error(Configuration::parse("runtime=python,graph=frozen"), program())
                .find("runtime=python runs graph=eager or a torch.compile mode"),
            std::string::npos);
  EXPECT_NE(config_error(Configuration::parse("runtime=python,precision=int8-dynamic"), program())
                .find("runtime=python applies fp32, bf16 or fp16"),
            std::string::npos);
  // PT2E and torchao's int8 exist only in Python: the C++ runtimes refuse them by name.
  EXPECT_NE(config_error(Configuration::parse("runtime=cpp,precision=int8-static"),
                         testing::image_model_traits())
                .find("is applied in Python (PT2E or torchao): runtime=python"),
            std::string::npos);
  WorkloadTraits with_torchao = program();
  with_torchao.engines = {"torchao"};
  EXPECT_NE(config_error(Configuration::parse("runtime=python,graph=eager,precision=int8-static"),
                         with_torchao)
                .find("needs a torch.compile graph"),
            std::string::npos);
  EXPECT_NE(config_error(Configuration::parse(
                             "runtime=python,graph=compile,precision=int8-static,grad=on"),
                         with_torchao)
                .find("precision=int8-static needs grad=inference or no_grad"),
            std::string::npos);
  const ResolvedConfiguration unasked =
      resolve(Configuration::parse("runtime=python,graph=compile,precision=int8-static"),
              with_torchao);
  EXPECT_EQ(unasked.value("grad"), "inference") << "the baseline grad=on gives way";
  EXPECT_NE(config_error(Configuration::parse("runtime=python,graph=compile-reduce-overhead"),
                         program())
                .find("exists only on CUDA devices"),
            std::string::npos);
  WorkloadTraits neither = program();
  neither.program_form = false;
  EXPECT_NE(config_error(Configuration::parse("runtime=python"), neither).find(
                "a torch.export program or a TorchScript model"),
            std::string::npos);
}

TEST(RuntimeKnobTest, PythonConvertsWeightsToHalfPrecisionOnCudaAndBf16Anywhere) {
  WorkloadTraits gpu = program();
  gpu.cuda = true;
  EXPECT_EQ(resolve(Configuration::parse("runtime=python,precision=fp16"), gpu).value("precision"),
            "fp16");
  EXPECT_EQ(resolve(Configuration::parse("runtime=python,precision=bf16"), program())
                .value("precision"),
            "bf16");
  EXPECT_NE(config_error(Configuration::parse("runtime=python,precision=fp16"), program())
                .find("only on CUDA"),
            std::string::npos);
}

TEST(RuntimeKnobTest, ABuiltinReachesEveryRuntimeAndTheGraphValuePicksIt) {
  const WorkloadTraits t = builtin();
  EXPECT_EQ(runtime_of(resolve(Configuration::parse("graph=frozen-opt"), t), t).name(),
            "torchscript");
  EXPECT_EQ(runtime_of(resolve(Configuration::parse("graph=aoti"), t), t).name(), "aoti");
  EXPECT_EQ(runtime_of(resolve(Configuration::parse("runtime=python"), t), t).name(),
            "python-eager");
  EXPECT_EQ(runtime_of(resolve(Configuration::parse("runtime=python,graph=compile"), t), t).name(),
            "python-compile");
  // The baseline of a built-in stays TorchScript eager (no compile to pay for it).
  EXPECT_EQ(resolve(Configuration{}, t).value("graph"), "eager");
  // Under AOTInductor the model is a program: autograd's mode and the module's flag are gone.
  const ResolvedConfiguration aoti = resolve(Configuration::parse("graph=aoti"), t);
  EXPECT_FALSE(aoti.knob("grad").applicable);
  EXPECT_FALSE(aoti.knob("format").applicable);
  EXPECT_NE(config_error(Configuration::parse("graph=aoti,grad=no_grad"), t).find("autograd"),
            std::string::npos);
}

TEST(RuntimeKnobTest, CudaGraphsAreACppKnobOnCudaAndAPythonCompileModeThere) {
  WorkloadTraits gpu = builtin();
  gpu.cuda = true;
  EXPECT_EQ(resolve(Configuration::parse("cuda_graphs=on,graph=frozen-opt"), gpu)
                .value("cuda_graphs"),
            "on");
  EXPECT_EQ(resolve(Configuration::parse("cuda_graphs=on,graph=aoti"), gpu).value("cuda_graphs"),
            "on");
  EXPECT_NE(config_error(Configuration::parse("cuda_graphs=on"), builtin()).find("CUDA devices"),
            std::string::npos);
  EXPECT_FALSE(resolve(Configuration{}, builtin()).knob("cuda_graphs").applicable)
      << "on a CPU a configuration does not name it";
  EXPECT_NE(config_error(Configuration::parse("runtime=python,cuda_graphs=on"), gpu)
                .find("graph=compile-reduce-overhead"),
            std::string::npos);
  EXPECT_TRUE(python_compile_captures(gpu));
}

TEST(RuntimeKnobTest, ATorchScriptFileRunsInPythonEagerButNotTorchCompile) {
  const WorkloadTraits t = testing::image_model_traits();
  EXPECT_EQ(resolve(Configuration::parse("runtime=python"), t).value("graph"), "eager");
  EXPECT_NE(config_error(Configuration::parse("runtime=python,graph=compile"), t)
                .find("does not trace a TorchScript module"),
            std::string::npos);
  EXPECT_NE(config_error(Configuration::parse("graph=aoti"), t).find("torch.export program"),
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

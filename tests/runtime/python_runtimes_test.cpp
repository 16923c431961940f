// The Python runtimes: eager and torch.compile's modes, what they make of the knobs.
#include <algorithm>

#include <gtest/gtest.h>

#include "support/test_support.h"
#include "torchperf/runtime/runtime.h"

namespace torchperf {
namespace {

WorkloadTraits program(bool cuda) {
  WorkloadTraits t = testing::image_program_traits();
  t.cuda = cuda;
  return runtime_named("python-compile").view(t);
}

}  // namespace

TEST(PythonRuntimesTest, TorchCompilesCudaGraphModesExistOnlyOnCuda) {
  const Runtime& compile = runtime_named("python-compile");
  EXPECT_EQ(compile.graphs(program(false)),
            (std::vector<std::string>{"eager", "compile", "compile-max-autotune"}));
  const auto ro = compile.applies("graph", "compile-reduce-overhead", program(false));
  ASSERT_TRUE(ro.has_value());
  EXPECT_FALSE(ro->applies);
  EXPECT_NE(ro->reason.find("CUDA"), std::string::npos);
  EXPECT_TRUE(compile.applies("graph", "compile-reduce-overhead", program(true))->applies);
  EXPECT_TRUE(compile.captures_cuda_graphs("compile-max-autotune", true));
  EXPECT_FALSE(compile.captures_cuda_graphs("compile-max-autotune-no-cudagraphs", true));
  EXPECT_FALSE(compile.captures_cuda_graphs("compile-reduce-overhead", false));
}

TEST(PythonRuntimesTest, TheGuidesStartOnAGpuIsHalfWeightsChannelsLastAndCudaGraphs) {
  const Runtime& python = runtime_named("python-eager");
  EXPECT_EQ(python.expert("graph", program(true))->front(), "compile-reduce-overhead");
  EXPECT_EQ(python.expert("precision", program(true))->front(), "fp16");
  EXPECT_EQ(python.expert("format", program(true))->front(), "channels_last");
  EXPECT_EQ(python.expert("graph", program(false))->front(), "compile");
  EXPECT_EQ(python.expert("precision", program(false))->front(), "bf16-autocast");
}

TEST(PythonRuntimesTest, StaticInt8IsSweptInACompiledGraphOnACpuWithTorchaoAndTheGuidesStartThere) {
  const Runtime& compile = runtime_named("python-compile");
  const Runtime& eager = runtime_named("python-eager");
  WorkloadTraits with_torchao = program(false);
  with_torchao.engines = {"torchao"};
  EXPECT_TRUE(compile.applies("precision", "int8-static", with_torchao)->applies);
  EXPECT_EQ(compile.expert("precision", with_torchao)->front(), "int8-static");
  const auto values = *compile.values("precision", with_torchao);
  EXPECT_NE(std::find(values.begin(), values.end(), "int8-static"), values.end());

  const auto in_eager = eager.applies("precision", "int8-static", with_torchao);
  EXPECT_FALSE(in_eager->applies);
  EXPECT_NE(in_eager->reason.find("needs a torch.compile graph"), std::string::npos);
  EXPECT_EQ(eager.expert("precision", with_torchao)->front(), "bf16-autocast");

  const auto without = compile.applies("precision", "int8-static", program(false));
  EXPECT_FALSE(without->applies);
  EXPECT_NE(without->reason.find("needs torchao"), std::string::npos);
  WorkloadTraits gpu = with_torchao;
  gpu.cuda = true;
  EXPECT_NE(compile.applies("precision", "int8-static", gpu)->reason.find("x86 CPUs only"),
            std::string::npos);
  WorkloadTraits no_layers = with_torchao;
  no_layers.convolutional = no_layers.linear = false;
  EXPECT_FALSE(compile.applies("precision", "int8-static", no_layers)->applies);
}

TEST(PythonRuntimesTest, TorchaosWeightConfigsNeedLinearLayersAndAreOfferedWhereTheyApply) {
  const Runtime& compile = runtime_named("python-compile");
  WorkloadTraits linear = program(false);
  linear.engines = {"torchao"};
  linear.linear = true;
  for (const char* value : {"int8-weight-only", "int8-dynamic-activation"}) {
    EXPECT_TRUE(compile.applies("precision", value, linear)->applies) << value;
    EXPECT_TRUE(runtime_named("python-eager").applies("precision", value, linear)->applies)
        << value << " runs eagerly too";
    const auto values = *compile.values("precision", linear);
    EXPECT_NE(std::find(values.begin(), values.end(), value), values.end()) << value;
  }
  linear.linear = false;
  EXPECT_NE(compile.applies("precision", "int8-weight-only", linear)->reason.find("no Linear"),
            std::string::npos);
}

TEST(PythonRuntimesTest, WhereALengthVariesTheGuidesCompileOnACpuIsOneDynamicGraph) {
  const Runtime& python = runtime_named("python-eager");
  WorkloadTraits varying = program(false);
  varying.named_dims = {"S"};
  EXPECT_EQ(*python.expert("graph", varying),
            (std::vector<std::string>{"compile-dynamic", "compile"}));
  varying.cuda = true;
  EXPECT_EQ(python.expert("graph", varying)->front(), "compile-reduce-overhead")
      << "on CUDA the guides' start captures graphs, a shape each";
}

TEST(PythonRuntimesTest, AStaticGraphPerWidthRunsOnlyAPaddingThatLeavesFewerWidthsThanItsRecompileLimit) {
  const Runtime& compile = runtime_named("python-compile");
  WorkloadTraits stream = program(false);
  stream.named_dims = {"S"};
  // Sorted batches whose longest lengths are 8, 16, ..., 400: 50 widths unpadded.
  for (std::int64_t l = 8; l <= 400; l += 8) stream.stream_batch_longest.push_back(l);
  stream.stream_longest = 450;
  const Applicability each = compile.graph_takes("compile-static", "padding", "batch-max", stream);
  EXPECT_FALSE(each.applies);
  EXPECT_NE(each.reason.find("50 widths"), std::string::npos) << each.reason;
  EXPECT_NE(each.reason.find("recompile_limit"), std::string::npos) << each.reason;
  EXPECT_FALSE(compile.graph_takes("compile-static", "padding", "multiple:32", stream).applies)
      << "13 widths: 32 to 416";
  EXPECT_TRUE(compile.graph_takes("compile-static", "padding", "multiple:64", stream).applies)
      << "7 widths: 64 to 448";
  EXPECT_TRUE(compile.graph_takes("compile-static", "padding", "buckets:48/104/200/450", stream).applies);
  EXPECT_TRUE(compile.graph_takes("compile-static", "padding", "max", stream).applies);
  EXPECT_TRUE(compile.graph_takes("compile-dynamic", "padding", "batch-max", stream).applies)
      << "one graph for every width";
  EXPECT_TRUE(compile.graph_takes("compile", "padding", "batch-max", stream).applies)
      << "the automatic default recompiles once, with the length dynamic";
  EXPECT_TRUE(compile.graph_takes("compile-static", "padding", "batch-max", program(false)).applies)
      << "without a stream, one shape";
}

TEST(PythonRuntimesTest, KnobsOfLibTorchAreNotAppliedAndSaySo) {
  const Runtime& python = runtime_named("python-eager");
  for (const char* knob : {"pad", "conv_bias", "executor", "qengine"}) {
    const auto a = python.applies(knob, "x", program(false));
    ASSERT_TRUE(a.has_value()) << knob;
    EXPECT_FALSE(a->applies);
    EXPECT_NE(a->reason.find("python runtime"), std::string::npos) << a->reason;
  }
  EXPECT_FALSE(python.applies("threads", "2", program(false)).has_value())
      << "the threads knob's own rule";
}

TEST(PythonRuntimesTest, TheSnippetCompilesInTheMeasuredModeWithFreezing) {
  const RuntimeSnippet s = runtime_named("python-compile").snippet("compile-reduce-overhead", true);
  ASSERT_EQ(s.python_setup.size(), 4u);
  EXPECT_NE(s.python_setup[1].find("freezing = True"), std::string::npos);
  EXPECT_EQ(s.python_setup[2], "model = torch.compile(model, mode=\"reduce-overhead\")");
  EXPECT_TRUE(runtime_named("python-eager").snippet("eager", false).python_setup.empty());
}

TEST(PythonRuntimesTest, ACompiledPointPaysItsCompileInItsWorkerPricedFromThePlainMode) {
  const auto graph = [](std::string g) {
    return [g](const std::string& knob) { return knob == "graph" ? g : std::string("n/a"); };
  };
  const Runtime& compile = runtime_named("python-compile");
  const Artefact tuned = compile.artefact(graph("compile-max-autotune"), {});
  EXPECT_EQ(tuned.kind, ArtefactKind::kWorkerCompile);
  EXPECT_EQ(tuned.name, "compile-max-autotune");
  EXPECT_EQ(tuned.plain, "compile");
  EXPECT_TRUE(tuned.autotunes);
  EXPECT_FALSE(compile.artefact(graph("compile"), {}).autotunes);
  EXPECT_EQ(runtime_named("python-eager").artefact(graph("eager"), {}).kind, ArtefactKind::kNone);
}

TEST(PythonRuntimesTest, TrainingStepsAreTheRuntimesWithCudaGraphModesOnlyOnCuda) {
  WorkloadTraits cpu;
  cpu.python_definition = true;
  cpu.torchscript_form = true;
  WorkloadTraits cuda = cpu;
  cuda.cuda = true;
  EXPECT_EQ(training_steps(cpu), (std::vector<std::string>{"torchscript", "eager", "compile"}));
  EXPECT_EQ(training_steps(cuda),
            (std::vector<std::string>{"torchscript", "eager", "compile", "compile-reduce-overhead",
                                      "compile-max-autotune"}));
  EXPECT_EQ(runtime_for_step("compile-reduce-overhead").name(), "python-compile");
  EXPECT_FALSE(runtime_for_step("compile-reduce-overhead").trains("compile-reduce-overhead", cpu).applies);
  WorkloadTraits scripted = cpu;
  scripted.python_definition = false;
  EXPECT_NE(runtime_for_step("eager").trains("eager", scripted).reason.find("Python definition"),
            std::string::npos);
  EXPECT_THROW(runtime_for_step("compile-max-autotune-no-cudagraphs"), ConfigError);
}

TEST(PythonRuntimesTest, APackageRunsInPythonsLoaderOnlyWhenTheCallersModuleCameWithIt) {
  const Runtime& loader = runtime_named("python-aoti");
  WorkloadTraits cli = testing::image_program_traits();
  EXPECT_FALSE(loader.accepts(cli).applies);
  EXPECT_NE(loader.accepts(cli).reason.find("offered to a tune from Python"), std::string::npos);
  WorkloadTraits from_python = cli;
  from_python.caller_module = true;
  EXPECT_TRUE(loader.accepts(from_python).applies);
  EXPECT_EQ(&runtime_for("python", "aoti", from_python), &loader);
  const WorkloadTraits view = loader.view(from_python);
  EXPECT_EQ(loader.graphs(view), (std::vector<std::string>{"aoti", "aoti-max-autotune"}));
  EXPECT_FALSE(loader.applies("grad", "inference", view)->applies);
  EXPECT_FALSE(loader.applies("precision", "bf16-autocast", view)->applies);
  EXPECT_TRUE(loader.applies("precision", "bf16", view)->applies);
  // The same package the C++ loader runs: one compile serves both.
  const auto values = [](const std::string& knob) {
    return knob == "graph" ? std::string("aoti") : std::string("bf16");
  };
  const Artefact mine = loader.artefact(values, view);
  const Artefact cpp = runtime_named("aoti").artefact(values, view);
  EXPECT_EQ(mine.kind, ArtefactKind::kPackage);
  EXPECT_EQ(mine.name, cpp.name);
  EXPECT_EQ(loader.worker(), RuntimeWorker::kPython);
}

}  // namespace torchperf

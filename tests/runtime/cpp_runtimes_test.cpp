// The C++ runtimes: TorchScript (freezing) and AOTInductor (a program's package).
#include <gtest/gtest.h>

#include "support/test_support.h"
#include "torchperf/models/builtin_models.h"
#include "torchperf/models/workload.h"
#include "torchperf/runtime/runtime.h"

namespace torchperf {
namespace {

WorkloadTraits both_forms() { return testing::image_builtin_traits(); }

}  // namespace

TEST(CppRuntimesTest, TorchScriptRunsItsFourGraphsAndRefusesTorchCompilesNamingThePythonRuntime) {
  const Runtime& ts = runtime_named("torchscript");
  const WorkloadTraits v = ts.view(both_forms());
  EXPECT_EQ(ts.graphs(v), (std::vector<std::string>{"eager", "frozen", "frozen-opt", "fused"}));
  EXPECT_EQ(ts.expert_graphs(v).front(), "frozen-opt");
  const auto compile = ts.applies("graph", "compile", v);
  ASSERT_TRUE(compile.has_value());
  EXPECT_FALSE(compile->applies);
  EXPECT_NE(compile->reason.find("runtime=python"), std::string::npos) << compile->reason;
  const auto fused = ts.applies("graph", "fused", v);
  ASSERT_TRUE(fused.has_value());
  EXPECT_FALSE(fused->applies) << "this test's traits have no CPU fuser";
  EXPECT_FALSE(ts.compiles("frozen-opt"));
  EXPECT_EQ(ts.worker(), RuntimeWorker::kCpp);
}

TEST(CppRuntimesTest, TorchScriptFreezingFoldsTheWeightsIntoTheGraph) {
  Workload w;
  w.model = std::make_unique<TorchScriptModel>(build_builtin("convbn"));
  const auto before = w.model->as_torchscript()->module().parameters().size();
  runtime_named("torchscript").prepare("frozen-opt", w);
  EXPECT_GT(before, 0u);
  EXPECT_EQ(w.model->as_torchscript()->module().parameters().size(), 0u)
      << "frozen: the weights are constants of the graph";
}

TEST(CppRuntimesTest, AotiTakesOnlyProgramsAndPaysACompileWithAPackageAsItsArtefact) {
  const Runtime& aoti = runtime_named("aoti");
  EXPECT_FALSE(aoti.accepts(testing::image_model_traits()).applies);
  EXPECT_NE(aoti.accepts(testing::image_model_traits()).reason.find("torch.export program"),
            std::string::npos);
  EXPECT_TRUE(aoti.accepts(both_forms()).applies);
  EXPECT_TRUE(aoti.compiles("aoti"));
  const Artefact package = aoti.artefact(
      [](const std::string& knob) {
        return knob == "graph" ? "aoti-max-autotune" : knob == "precision" ? "bf16" : "n/a";
      },
      both_forms());
  EXPECT_EQ(package.kind, ArtefactKind::kPackage);
  EXPECT_EQ(package.name, "precision=bf16,max_autotune=1,device=cpu");
  EXPECT_TRUE(package.autotunes);

  const RuntimeSnippet s = aoti.snippet("aoti-max-autotune", false);
  ASSERT_FALSE(s.python_setup.empty());
  EXPECT_NE(s.python_setup[0].find("\"max_autotune\": True"), std::string::npos);
}

TEST(CppRuntimesTest, CudaGraphsAreTheKnobsOwnRuleUnderBothCppRuntimes) {
  WorkloadTraits gpu = both_forms();
  gpu.cuda = true;
  for (const char* name : {"torchscript", "aoti"}) {
    const Runtime& r = runtime_named(name);
    EXPECT_FALSE(r.applies("cuda_graphs", "on", r.view(gpu)).has_value())
        << name << ": the knob's own rule (CUDA only) decides";
  }
  EXPECT_TRUE(runtime_named("python-eager").applies("cuda_graphs", "off", gpu).has_value());
}

TEST(CppRuntimesTest, OnCudaTorchScriptsOptimizedGraphRefusesAutocastAndItsFrozenGraphTakesIt) {
  WorkloadTraits gpu = both_forms();
  gpu.cuda = true;
  const Runtime& ts = runtime_named("torchscript");
  const WorkloadTraits view = ts.view(gpu);
  for (const char* autocast : {"fp16-autocast", "bf16-autocast"}) {
    const Applicability a = ts.graph_takes("frozen-opt", "precision", autocast, view);
    EXPECT_FALSE(a.applies) << autocast;
    EXPECT_NE(a.reason.find("cuDNN's conv-add-relu"), std::string::npos) << a.reason;
    EXPECT_TRUE(ts.graph_takes("frozen", "precision", autocast, view).applies) << autocast;
  }
  EXPECT_TRUE(ts.graph_takes("frozen-opt", "precision", "fp16", view).applies)
      << "half weights: nothing left to cast";
  EXPECT_TRUE(ts.graph_takes("frozen-opt", "precision", "bf16-autocast", ts.view(both_forms()))
                  .applies)
      << "on the CPU optimize_for_inference fuses no cuDNN operator";
  gpu.convolutional = false;
  EXPECT_TRUE(ts.graph_takes("frozen-opt", "precision", "fp16-autocast", ts.view(gpu)).applies)
      << "without convolutions nothing is fused";
}

}  // namespace torchperf

// The engine runtimes: ONNX Runtime and OpenVINO, each a family of one runtime, what they take
// and what they make of the knobs.
#include <gtest/gtest.h>

#include "support/test_support.h"
#include "torchperf/runtime/runtime.h"

namespace torchperf {
namespace {

WorkloadTraits with_engines(WorkloadTraits t) {
  t.engines = {"onnxruntime", "openvino"};
  return t;
}

std::string reason(const Runtime& r, const WorkloadTraits& t) { return r.accepts(t).reason; }

}  // namespace

TEST(EngineRuntimesTest, AnEngineIsAFamilyOfOneRuntimeThatRunsInThePythonWorker) {
  const WorkloadTraits t = with_engines(testing::image_program_traits());
  for (const char* name : {"onnxruntime", "openvino"}) {
    const Runtime& r = runtime_named(name);
    EXPECT_EQ(r.family(), name);
    EXPECT_EQ(r.worker(), RuntimeWorker::kPython);
    EXPECT_EQ(&runtime_for(name, "", t), &r);
    EXPECT_TRUE(r.compiles(r.graphs(r.view(t)).front())) << "its conversion is paid like a compile";
  }
  EXPECT_EQ(runtime_named("onnxruntime").graphs(t),
            (std::vector<std::string>{"ort", "ort-extended", "ort-basic", "ort-parallel",
                                      "ort-no-arena"}));
  EXPECT_EQ(runtime_running("openvino-throughput").name(), "openvino");
}

TEST(EngineRuntimesTest, TheGuidesStartIsOrtWithAllOptimisationsAndOpenVinosLatencyHint) {
  const WorkloadTraits t = with_engines(testing::image_program_traits());
  EXPECT_EQ(runtime_named("onnxruntime").expert_graphs(t), (std::vector<std::string>{"ort"}));
  EXPECT_EQ(runtime_named("openvino").expert_graphs(t), (std::vector<std::string>{"openvino"}));
  EXPECT_EQ(engine_graph("ort")->level, std::string("all"));
  EXPECT_EQ(engine_graph("openvino")->hint, std::string("LATENCY"));
  EXPECT_EQ(engine_graph("compile"), nullptr);
}

TEST(EngineRuntimesTest, AnEngineNotInstalledIsRefusedSayingHowToInstallIt) {
  const WorkloadTraits bare = testing::image_program_traits();
  const Applicability a = runtime_named("onnxruntime").accepts(bare);
  EXPECT_FALSE(a.applies);
  EXPECT_NE(a.reason.find("ONNX Runtime is not installed"), std::string::npos) << a.reason;
  EXPECT_NE(a.reason.find("torchperf[engines]"), std::string::npos) << a.reason;
  EXPECT_TRUE(family_runtimes("openvino", bare).empty());
}

TEST(EngineRuntimesTest, AnEngineConvertsAProgramAndRefusesATorchScriptFile) {
  const WorkloadTraits script = with_engines(testing::image_model_traits());
  EXPECT_NE(reason(runtime_named("openvino"), script).find("torch.export program"),
            std::string::npos);
  EXPECT_TRUE(runtime_named("openvino").accepts(with_engines(testing::image_builtin_traits())).applies);
}

TEST(EngineRuntimesTest, OnCudaOnlyAnEngineWithACudaProviderRuns) {
  WorkloadTraits cuda = with_engines(testing::image_program_traits());
  cuda.cuda = true;
  EXPECT_NE(reason(runtime_named("onnxruntime"), cuda).find("CUDAExecutionProvider"),
            std::string::npos);
  EXPECT_NE(reason(runtime_named("openvino"), cuda).find("not on CUDA"), std::string::npos);
  cuda.cuda_engines = {"onnxruntime"};
  EXPECT_TRUE(runtime_named("onnxruntime").accepts(cuda).applies);
}

TEST(EngineRuntimesTest, AnEngineTakesThreadsBatchAndTheStreamButNotPyTorchsOwnKnobs) {
  const Runtime& ort = runtime_named("onnxruntime");
  const WorkloadTraits t = ort.view(with_engines(testing::image_program_traits()));
  for (const char* knob : {"threads", "batch", "padding", "batching", "allocator"})
    EXPECT_FALSE(ort.applies(knob, "1", t).has_value()) << knob << ": the knob's own declaration";
  EXPECT_TRUE(ort.applies("precision", "fp32", t)->applies);
  EXPECT_FALSE(ort.applies("precision", "bf16", t)->applies);
  EXPECT_FALSE(ort.applies("format", "channels_last", t)->applies);
  EXPECT_FALSE(ort.applies("grad", "inference", t)->applies);
  EXPECT_FALSE(ort.applies("graph", "openvino", t)->applies);
  EXPECT_NE(ort.applies("graph", "compile", t)->reason.find("ort, ort-extended"),
            std::string::npos);
}

TEST(EngineRuntimesTest, AnEnginesConversionIsAWorkerCompilePricedByItsEnginesPlainGraph) {
  const Runtime& ov = runtime_named("openvino");
  const WorkloadTraits t = ov.view(with_engines(testing::image_program_traits()));
  const Artefact a = ov.artefact(
      [](const std::string& knob) { return knob == "graph" ? "openvino-throughput" : "n/a"; }, t);
  EXPECT_EQ(a.kind, ArtefactKind::kWorkerCompile);
  EXPECT_EQ(a.name, "openvino-throughput");
  EXPECT_EQ(a.plain, "openvino");
}

TEST(EngineRuntimesTest, AnEnginesSnippetExportsThenOpensItsSessionOnTheSameThreads) {
  const RuntimeSnippet ort = runtime_named("onnxruntime").snippet("ort-basic", false);
  std::string lines;
  for (const auto& l : ort.python_setup) lines += l + "\n";
  EXPECT_NE(lines.find("torch.onnx.export(program"), std::string::npos) << lines;
  EXPECT_NE(lines.find("ORT_ENABLE_BASIC"), std::string::npos) << lines;
  EXPECT_NE(lines.find("intra_op_num_threads = torch.get_num_threads()"), std::string::npos);
  EXPECT_NE(lines.find("CPUExecutionProvider"), std::string::npos);
  const RuntimeSnippet ov = runtime_named("openvino").snippet("openvino-throughput", false);
  lines.clear();
  for (const auto& l : ov.python_setup) lines += l + "\n";
  EXPECT_NE(lines.find("\"PERFORMANCE_HINT\": \"THROUGHPUT\""), std::string::npos) << lines;
  EXPECT_NE(lines.find("\"INFERENCE_PRECISION_HINT\": \"f32\""), std::string::npos) << lines;
}

TEST(EngineRuntimesTest, OpenVinosStaticShapesAreRefusedWhereTheInputsSizesVaryAndItsSnippetReshapes) {
  const Runtime& ov = runtime_named("openvino");
  WorkloadTraits t = ov.view(with_engines(testing::image_program_traits()));
  EXPECT_TRUE(ov.applies("graph", "openvino-static", t)->applies);
  t.named_dims = {"S"};
  const Applicability varying = *ov.applies("graph", "openvino-static", t);
  EXPECT_FALSE(varying.applies);
  EXPECT_NE(varying.reason.find("compiles the IR for each shape it meets"), std::string::npos)
      << varying.reason;
  EXPECT_NE(varying.reason.find("graph=openvino"), std::string::npos) << varying.reason;
  EXPECT_TRUE(ov.applies("graph", "openvino", t)->applies);
  std::string lines;
  for (const auto& l : ov.snippet("openvino-static", false).python_setup) lines += l + "\n";
  EXPECT_NE(lines.find("ir.reshape({port: list(s) for port, s in zip(ir.inputs, shapes)})"),
            std::string::npos)
      << "compiled again for each shape met, never for the example's alone: " << lines;
  lines.clear();
  for (const auto& l : ov.snippet("openvino", false).python_setup) lines += l + "\n";
  EXPECT_EQ(lines.find("reshape"), std::string::npos) << lines;
}

// Issue 61: ONNX Runtime's own int8 (onnxruntime.quantization) on the CPU; a CNN's reduced start is
// its static int8, as the guides' CPU advice (004) has it.
TEST(EngineRuntimesTest, OnnxRuntimeQuantizesToInt8OnTheCpuAndOpenVinoRunsItsStaticInt8File) {
  const Runtime& ort = runtime_named("onnxruntime");
  const WorkloadTraits cnn = ort.view(with_engines(testing::image_program_traits()));
  EXPECT_EQ(*ort.values("precision", cnn), (std::vector<std::string>{"fp32", "int8-static"}))
      << "int8-dynamic quantizes MatMul/Gemm weights: a model with Linear layers";
  EXPECT_EQ(*ort.expert("precision", cnn), (std::vector<std::string>{"int8-static"}));
  WorkloadTraits linear = cnn;
  linear.convolutional = false;
  linear.linear = true;
  EXPECT_EQ(*ort.values("precision", linear),
            (std::vector<std::string>{"fp32", "int8-static", "int8-dynamic"}));
  EXPECT_TRUE(ort.expert("precision", linear)->empty()) << "a Linear model's int8 is measured";
  EXPECT_NE(ort.applies("precision", "int8-dynamic", cnn)->reason.find("no Linear layers"),
            std::string::npos);
  WorkloadTraits cuda = cnn;
  cuda.cuda = true;
  EXPECT_NE(ort.applies("precision", "int8-static", cuda)->reason.find("CPU only"),
            std::string::npos);
  // OpenVINO runs ONNX Runtime's QDQ file in int8: static only, and only beside onnxruntime.
  const Runtime& ov = runtime_named("openvino");
  EXPECT_EQ(*ov.values("precision", cnn), (std::vector<std::string>{"fp32", "int8-static"}));
  EXPECT_EQ(*ov.expert("precision", cnn), (std::vector<std::string>{"int8-static"}));
  EXPECT_NE(ov.applies("precision", "int8-dynamic", linear)->reason.find("is ONNX Runtime's"),
            std::string::npos);
  WorkloadTraits without_ort = cnn;
  without_ort.engines = {"openvino"};
  EXPECT_NE(ov.applies("precision", "int8-static", without_ort)->reason.find("onnxruntime is not "
                                                                              "installed"),
            std::string::npos);
  EXPECT_NE(ort.applies("precision", "bf16", cnn)->reason.find("is PyTorch's"), std::string::npos);
  // Its lines are its own quantization of the exported file, never PT2E's.
  const auto lines = ort.knob_snippet("precision", "int8-static");
  ASSERT_TRUE(lines.has_value());
  std::string text;
  for (const auto& l : lines->python_setup) text += l + "\n";
  EXPECT_NE(text.find("q.quantize_static("), std::string::npos) << text;
  EXPECT_FALSE(ort.knob_snippet("precision", "fp32").has_value());
  EXPECT_FALSE(ov.knob_snippet("precision", "int8-dynamic").has_value());
  ASSERT_TRUE(ov.knob_snippet("precision", "int8-static").has_value());
}

}  // namespace torchperf

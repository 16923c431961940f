#include "torchperf/report/apply_snippets.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "support/synthetic_run.h"
#include "support/test_support.h"
#include "test_paths.h"
#include "torchperf/config/configuration_file.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

class ApplySnippetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("torchperf-snippets-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunAnalysis winner_run(const std::string& winner, const std::string& model,
                         const std::string& input_source, const std::string& inputs,
                         std::vector<std::string> dims = {}) {
    testing::SyntheticRun run;
    run.dims = std::move(dims);
    run.model = model;
    run.input_source = input_source;
    run.inputs = inputs;
    for (const auto& [k, v] : key_knobs(winner)) run.axes.push_back({k, {v}});
    run.points = testing::full_factorial(run.axes, [](const auto&) { return 10.0; });
    run.winner = winner;
    testing::write_synthetic_run(dir_.string(), run);
    return analyze(load_run(dir_.string()));
  }

  static std::string run_python(const std::string& script, const std::string& model) {
    const std::string path = (fs::temp_directory_path() / ("snippet-" + std::to_string(::getpid()) + ".py")).string();
    std::ofstream(path) << script;
    const std::string out = path + ".out";
    const int rc = std::system((std::string(TORCHPERF_TEST_PYTHON) + " " + path + " " + model + " > " + out + " 2>&1").c_str());
    std::ifstream in(out);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fs::remove(path);
    fs::remove(out);
    return std::to_string(rc) + ":" + text;
  }
  fs::path dir_;
};

TEST_F(ApplySnippetsTest, EveryKnobOfTheWinnerAppearsInBothLanguages) {
  const auto a = winner_run(
      "threads=2,batch=8,mode=eval,grad=inference,precision=bf16-autocast,format=channels_last,"
      "graph=frozen-opt",
      "builtin:resnet18", "3x224x224", "Float[1,3,224,224]");
  const ApplySnippets s = make_apply_snippets(a);
  for (const char* piece :
       {"at::set_num_threads(2);", "module.eval();", "c10::InferenceMode inference_mode;",
        "at::autocast::set_autocast_cpu_dtype(at::kBFloat16);",
        "p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast))",
        "module = torch::jit::freeze(module);\n  module = torch::jit::optimize_for_inference(module);",
        "torch::randn({8, 3, 224, 224}, torch::kFloat).contiguous(at::MemoryFormat::ChannelsLast)"})
    EXPECT_NE(s.cpp.find(piece), std::string::npos) << piece << "\n" << s.cpp;
  for (const char* piece :
       {"torch.set_num_threads(2)", "model.eval()",
        "with torch.inference_mode(), torch.autocast(\"cpu\", dtype=torch.bfloat16):",
        "model = model.to(memory_format=torch.channels_last)",
        "torch.jit.optimize_for_inference(torch.jit.freeze(model))",
        "torch.randn((8, 3, 224, 224), dtype=torch.float32),",
        // Issue 84: the call converts whatever inputs it is given, as they were measured.
        "def run(*inputs):",
        "    inputs = [x.contiguous(memory_format=torch.channels_last) if "
        "x.is_floating_point() and x.dim() == 4 else x for x in inputs]\n",
        "output = run(*inputs)"})
    EXPECT_NE(s.python.find(piece), std::string::npos) << piece << "\n" << s.python;
  // Mode comes before the graph is frozen (freezing needs eval), as in the registry.
  EXPECT_LT(s.cpp.find("module.eval();"), s.cpp.find("torch::jit::freeze"));
}

TEST_F(ApplySnippetsTest, WorkerKnobsBecomeTheEnvironmentToStartTheProgramWith) {
  const auto a = winner_run("threads=2,batch=8,allocator=glibc-tuned,omp_wait=passive,interop_threads=1",
                            "builtin:resnet18", "3x224x224", "Float[1,3,224,224]");
  const ApplySnippets s = make_apply_snippets(a);
  for (const std::string& text : {s.cpp, s.python}) {
    EXPECT_NE(text.find("MALLOC_MMAP_THRESHOLD_=33554432"), std::string::npos) << text;
    EXPECT_NE(text.find("OMP_WAIT_POLICY=PASSIVE"), std::string::npos) << text;
  }
  EXPECT_NE(s.cpp.find("at::set_num_interop_threads(1);"), std::string::npos) << s.cpp;
  EXPECT_NE(s.python.find("torch.set_num_interop_threads(1)"), std::string::npos) << s.python;
  EXPECT_NE(s.python.find(" python3 this_script.py"), std::string::npos) << s.python;
  EXPECT_LT(s.python.find("MALLOC_MMAP"), s.python.find("import torch")) << "said before it runs";
}

TEST_F(ApplySnippetsTest, TheConfigurationFileReadsBackAsTheWinner) {
  const std::string winner = "threads=1,batch=4,mode=eval,grad=no_grad,precision=fp32,graph=frozen";
  const auto a = winner_run(winner, "builtin:mlp", "784", "Float[1,784]");
  const ApplySnippets s = make_apply_snippets(a);
  const std::string path = (dir_ / "winner.json").string();
  std::ofstream(path) << s.config_json;
  const ConfigurationFile back = read_configuration_file(path);
  EXPECT_EQ(back.configuration.to_string(), Configuration::parse(winner).to_string());
  EXPECT_EQ(back.model, "builtin:mlp");
  EXPECT_EQ(back.input_spec, "784");
  EXPECT_NE(back.evidence.find("over the baseline"), std::string::npos);
}

TEST_F(ApplySnippetsTest, ThePythonSnippetRunsATorchvisionModelAsTheWinner) {
  const std::string model = testing::fixture("resnet18_scripted.pt");
  const auto a = winner_run(
      "threads=1,batch=2,mode=eval,grad=inference,precision=fp32,format=channels_last,graph=frozen-opt",
      model, "3x64x64", "Float[1,3,64,64]");
  const ApplySnippets s = make_apply_snippets(a);
  const std::string result = run_python(s.python, model);
  EXPECT_EQ(result.rfind("0:", 0), 0u) << s.python << "\n" << result;
  EXPECT_NE(result.find("output (2, 1000)"), std::string::npos) << result;
}

// Builds the C++ snippet with CMake (find_package(Torch), as its first lines tell a user) against
// this machine's LibTorch, runs it on the torchvision fixture and returns what it printed.
std::string build_and_run_cpp(const fs::path& dir, const std::string& cpp, const std::string& model) {
  const fs::path project = dir / "cpp";
  fs::remove_all(project);
  fs::create_directories(project);
  std::ofstream(project / "main.cpp") << cpp;
  std::ofstream(project / "CMakeLists.txt")
      << "cmake_minimum_required(VERSION 3.18)\nproject(apply CXX)\n"
         "find_package(Torch REQUIRED)\nadd_executable(apply main.cpp)\n"
         "set_property(TARGET apply PROPERTY CXX_STANDARD 17)\n"
         "target_link_libraries(apply ${TORCH_LIBRARIES})\n";
  const std::string log = (dir / "build.log").string();
  const std::string build = (project / "build").string();
  const std::string commands =
      "cmake -S " + project.string() + " -B " + build + " -DTorch_DIR=" TORCHPERF_TEST_TORCH_DIR
      " -DCMAKE_CXX_COMPILER=" TORCHPERF_TEST_CXX_COMPILER " -DCMAKE_BUILD_TYPE=Release > " + log +
      " 2>&1 && cmake --build " + build + " >> " + log + " 2>&1 && " + build + "/apply " + model +
      " >> " + log + " 2>&1";
  const int rc = std::system(commands.c_str());
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return std::to_string(rc) + ":" + output;
}

TEST_F(ApplySnippetsTest, TheCppSnippetBuildsWithCMakeAgainstLibTorchAndRunsTheModel) {
  const std::string model = testing::fixture("resnet18_scripted.pt");
  const auto a = winner_run(
      "threads=1,batch=2,mode=eval,grad=inference,precision=bf16-autocast,format=channels_last,"
      "graph=frozen-opt",
      model, "3x64x64", "Float[1,3,64,64]");
  const ApplySnippets s = make_apply_snippets(a);
  const std::string result = build_and_run_cpp(dir_, s.cpp, model);
  ASSERT_EQ(result.rfind("0:", 0), 0u) << s.cpp << "\n" << result;
  EXPECT_NE(result.find("output [2, 1000]"), std::string::npos) << result;
}

TEST_F(ApplySnippetsTest, TheOtherKnobValuesBuildAndRunToo) {
  // no_grad, weights converted to bf16, and the fuser (whose header Debian's LibTorch lacks).
  const std::string model = testing::fixture("resnet18_scripted.pt");
  const auto a = winner_run("threads=2,batch=1,mode=eval,grad=no_grad,precision=bf16,graph=fused",
                            model, "3x32x32", "Float[1,3,32,32]");
  const ApplySnippets s = make_apply_snippets(a);
  EXPECT_NE(s.cpp.find("c10::NoGradGuard no_grad;"), std::string::npos) << s.cpp;
  EXPECT_NE(s.cpp.find("module.to(at::kBFloat16);"), std::string::npos) << s.cpp;
  const std::string result = build_and_run_cpp(dir_, s.cpp, model);
  ASSERT_EQ(result.rfind("0:", 0), 0u) << s.cpp << "\n" << result;
  EXPECT_NE(result.find("output [1, 1000]"), std::string::npos) << result;
  const std::string python = run_python(s.python, model);
  EXPECT_EQ(python.rfind("0:", 0), 0u) << s.python << "\n" << python;
}

TEST_F(ApplySnippetsTest, ACudaRunMovesModelAndInputsAndAutocastsOnCuda) {
  testing::SyntheticRun run;
  run.model = "model.pt";
  run.input_source = "3x224x224";
  run.inputs = "Float[1,3,224,224]";
  run.device = "cuda:0";
  const std::string winner = "threads=1,batch=8,mode=eval,precision=bf16-autocast,cudnn_benchmark=on,tf32=on";
  for (const auto& [k, v] : key_knobs(winner)) run.axes.push_back({k, {v}});
  run.points = testing::full_factorial(run.axes, [](const auto&) { return 10.0; });
  run.winner = winner;
  testing::write_synthetic_run(dir_.string(), run);
  const ApplySnippets s = make_apply_snippets(analyze(load_run(dir_.string())));
  for (const char* piece : {"const torch::Device device(\"cuda:0\");", "module.to(device);",
                            "torch::randn({8, 3, 224, 224}, torch::kFloat).to(device)",
                            "at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);",
                            "at::autocast::set_autocast_gpu_dtype(at::kBFloat16);",
                            "at::globalContext().setBenchmarkCuDNN(true);",
                            "at::globalContext().setAllowTF32CuBLAS(true);"})
    EXPECT_NE(s.cpp.find(piece), std::string::npos) << piece << "\n" << s.cpp;
  for (const char* piece : {"model = model.to(device)", "torch.autocast(\"cuda\", dtype=torch.bfloat16)",
                            "torch.backends.cudnn.benchmark = True",
                            "torch.backends.cuda.matmul.allow_tf32 = True"})
    EXPECT_NE(s.python.find(piece), std::string::npos) << piece << "\n" << s.python;
}

TEST_F(ApplySnippetsTest, ThePythonSnippetFeedsTokenInputsWithTheirRanges) {
  const std::string model = testing::fixture("two_inputs.pt");
  const auto a = winner_run("threads=1,batch=3,mode=eval,grad=no_grad,precision=fp32,graph=eager",
                            model, "int64:16@0..100;int64:16@0..2", "Long[1,16]; Long[1,16]");
  const ApplySnippets s = make_apply_snippets(a);
  EXPECT_NE(s.python.find("torch.randint(0, 100, (3, 16), dtype=torch.int64)"), std::string::npos)
      << s.python;
  EXPECT_NE(s.cpp.find("torch::randint(0, 100, {3, 16}, torch::kLong)"), std::string::npos) << s.cpp;
}

TEST_F(ApplySnippetsTest, APythonWinnerOfAProgramComesFirstAndLoadsTheProgramsModule) {
  const auto a = winner_run("runtime=python,threads=1,batch=8,grad=inference,precision=fp32,graph=eager",
                            "/runs/x/model.pt2", "64", "Float[1,64]");
  const ApplySnippets s = make_apply_snippets(a);
  EXPECT_TRUE(s.python_first);
  EXPECT_NE(s.python.find("program = torch.export.load(sys.argv[1] if len(sys.argv) > 1 else "
                          "\"/runs/x/model.pt2\")\nmodel = program.module()"),
            std::string::npos)
      << s.python;
  EXPECT_EQ(s.python.find("torch.jit.load"), std::string::npos) << s.python;
  EXPECT_FALSE(make_apply_snippets(winner_run("threads=1", "builtin:mlp", "784", "Float[1,784]"))
                   .python_first);
}

TEST_F(ApplySnippetsTest, AStreamsSnippetsFeedTheDimsTypicalLengthAndAProgramIsNoJitLoad) {
  // Issue 63: a stream's snippets fed (16, 0) inputs, and a Python winner's C++ snippet called
  // torch::jit::load on a .pt2.
  const auto a = winner_run("runtime=python,threads=1,batch=16,grad=inference,precision=fp32,"
                            "graph=eager",
                            "/runs/x/model.pt2", "int64:S@0..1000;int64:S@1..2",
                            "Long[1,32]; Long[1,32]", {"S=40..40"});
  const ApplySnippets s = make_apply_snippets(a);
  EXPECT_NE(s.python.find("torch.randint(0, 1000, (16, 40), dtype=torch.int64)"),
            std::string::npos)
      << s.python;
  EXPECT_EQ(s.python.find(", 0)"), std::string::npos) << s.python;
  EXPECT_EQ(s.cpp.find("torch::jit::load"), std::string::npos) << s.cpp;
  EXPECT_NE(s.cpp.find("aoti_compile_and_package(torch.export.load('/runs/x/model.pt2')"),
            std::string::npos)
      << s.cpp;
  EXPECT_NE(s.cpp.find("torch::randint(1, 2, {16, 40}, torch::kLong)"), std::string::npos)
      << s.cpp;
}

TEST_F(ApplySnippetsTest, AStaticInt8WinnersPythonSnippetCalibratesOnItsInputsAndRuns) {
  const std::string model = testing::fixture("mlp_dynamic.pt2");
  const auto a = winner_run(
      "runtime=python,threads=1,batch=4,grad=inference,precision=int8-static,graph=compile", model,
      "32", "Float[1,32]");
  const ApplySnippets s = make_apply_snippets(a);
  const auto inputs = s.python.find("inputs = [");
  const auto calibrated = s.python.find("model(*inputs)  # calibration");
  ASSERT_NE(calibrated, std::string::npos) << s.python;
  EXPECT_LT(inputs, calibrated) << "the inputs come before the setup that calibrates on them";
  EXPECT_LT(calibrated, s.python.find("torch.compile(model)")) << s.python;
  // torchperf's Python package, as `pip install torchperf` puts it beside torchao.
  const std::string result = run_python(
      "import sys; sys.path.insert(0, \"" TORCHPERF_TEST_SOURCE_DIR "/python\")\n" + s.python, model);
  EXPECT_EQ(result.rfind("0:", 0), 0u) << s.python << "\n" << result;
  EXPECT_NE(result.find("output (4, 16)"), std::string::npos) << result;
}

// Issue 61: ONNX Runtime's int8 winner is ONNX Runtime's quantization of the exported file, not
// PT2E's; the snippet quantizes after the session's lines and makes the session again.
TEST_F(ApplySnippetsTest, AnEngineInt8WinnersPythonSnippetQuantizesTheOnnxFileAndRuns) {
  const std::string model = testing::fixture("mlp_dynamic.pt2");
  for (const std::string graph : {"ort", "openvino"})
  for (const std::string precision : {"int8-static", "int8-dynamic"}) {
    if (graph == "openvino" && precision == "int8-dynamic") continue;  // ONNX Runtime's alone
    const auto a = winner_run("runtime=" + std::string(graph == "ort" ? "onnxruntime" : "openvino") +
                                  ",threads=1,batch=4,precision=" + precision + ",graph=" + graph,
                              model, "32", "Float[1,32]");
    const ApplySnippets s = make_apply_snippets(a);
    EXPECT_TRUE(s.python_first);
    EXPECT_EQ(s.python.find("prepare_pt2e"), std::string::npos) << "not PT2E's int8: " << s.python;
    const auto session = s.python.find(graph == "ort" ? "session = ort.InferenceSession(\"model.onnx\""
                                                      : "request = compiled.create_infer_request()");
    const auto quantize = s.python.find(precision == "int8-static" ? "q.quantize_static("
                                                                   : "q.quantize_dynamic(");
    ASSERT_NE(quantize, std::string::npos) << s.python;
    EXPECT_LT(session, quantize) << s.python;
    const fs::path work = dir_ / (graph + "-" + precision);
    fs::create_directories(work);
    const std::string result = run_python("import os; os.chdir(\"" + work.string() + "\")\n" +
                                              s.python +
                                              "print(\"outputs\", [tuple(o.shape) for o in output])\n",
                                          model);
    EXPECT_EQ(result.rfind("0:", 0), 0u) << s.python << "\n" << result;
    EXPECT_NE(result.find("outputs [(4, 16)]"), std::string::npos) << s.python << result;
    EXPECT_TRUE(fs::exists(work / "model.int8.onnx")) << result;
  }
}

// Issue 84: the snippet a user copies broke at any shape but the example's (an engine re-exported
// the module at the example's shape and built a static IR: (8, 40) and (3, 24) failed after a tune
// over lengths). Each runtime's snippet runs the saved program, its batch and length dynamic, and
// its run() is called in a fresh process at three shapes the example is not, against the program
// itself; over a stream of lengths its batches() cuts real samples as the crowned policy does.
TEST_F(ApplySnippetsTest, EachRuntimesPythonSnippetRunsAtShapesOtherThanTheExamples) {
  const std::string model = testing::fixture("token_pool_dynamic.pt2");
  const std::string check = R"(
reference = torch.export.load(sys.argv[1]).module()
for shape in [(3, 24), (8, 40), (1, 5)]:
    ids = torch.randint(0, 1000, shape)
    mask = torch.ones(shape, dtype=torch.int64)
    got = run(ids, mask)
    got = got[0] if isinstance(got, (list, tuple)) else got
    want = reference(ids, mask)
    assert got.shape == want.shape, (shape, got.shape, want.shape)
    assert torch.allclose(got.float(), want, atol=2e-2, rtol=2e-2), (shape, (got.float() - want).abs().max())
    print("shape", shape, "ok")
samples = [(torch.randint(0, 1000, (n,)), torch.ones(n, dtype=torch.int64)) for n in (5, 17, 33, 60, 9, 12, 41)]
seen = []
for taken, batch in batches(samples):
    got = run(*batch)
    got = got[0] if isinstance(got, (list, tuple)) else got
    assert got.shape[0] == len(taken), (got.shape, taken)
    for row, i in enumerate(taken):
        want = reference(samples[i][0][None], samples[i][1][None])
        assert torch.allclose(got[row].float(), want[0], atol=2e-2, rtol=2e-2), (i, got[row], want)
    seen += taken
assert sorted(seen) == list(range(len(samples))), seen
print("batches ok")
)";
  for (const std::string winner :
       {"runtime=python,threads=1,batch=4,grad=inference,precision=fp32,graph=eager,"
        "padding=buckets:16/32/64,batching=sorted:16",
        "runtime=python,threads=1,batch=4,grad=inference,precision=bf16-autocast,"
        "graph=compile-dynamic,padding=multiple:8,batching=arrival",
        "runtime=python,threads=1,batch=4,grad=no_grad,precision=fp32,graph=compile,"
        "padding=batch-max,batching=arrival",
        "runtime=onnxruntime,threads=1,batch=4,precision=fp32,graph=ort,padding=max,"
        "batching=arrival",
        "runtime=openvino,threads=1,batch=4,precision=fp32,graph=openvino,"
        "padding=buckets:16/64,batching=sorted:4"}) {
    const auto a = winner_run(winner, model, "int64:S@0..1000;int64:S@1..2",
                              "Long[4,32]; Long[4,32]", {"S=lognormal:20:0.5:4..64"});
    const ApplySnippets s = make_apply_snippets(a);
    const fs::path work = dir_ / std::to_string(std::hash<std::string>{}(winner));
    fs::create_directories(work);
    const std::string result =
        run_python("import os; os.chdir(\"" + work.string() + "\")\n" + s.python + check, model);
    EXPECT_EQ(result.rfind("0:", 0), 0u) << winner << "\n" << s.python << "\n" << result;
    EXPECT_NE(result.find("batches ok"), std::string::npos) << winner << "\n" << result;
  }
  // OpenVINO's static graph compiles the IR again for each shape it meets (a program of a
  // dynamic batch, no length: the graph is offered only where no length varies).
  const std::string mlp = testing::fixture("mlp_dynamic.pt2");
  const auto a = winner_run("runtime=openvino,threads=1,batch=4,precision=fp32,graph=openvino-static",
                            mlp, "32", "Float[4,32]");
  const fs::path work = dir_ / "openvino-static";
  fs::create_directories(work);
  const std::string result = run_python(
      "import os; os.chdir(\"" + work.string() + "\")\n" + make_apply_snippets(a).python + R"(
reference = torch.export.load(sys.argv[1]).module()
for rows in (3, 8, 1):
    x = torch.randn(rows, 32)
    assert torch.allclose(run(x)[0], reference(x), atol=1e-4), rows
print("static ok", len(by_shape))
)",
      mlp);
  EXPECT_EQ(result.rfind("0:", 0), 0u) << result;
  EXPECT_NE(result.find("static ok 4"), std::string::npos) << "the example's and three more: " << result;
}

TEST_F(ApplySnippetsTest, TheCppSnippetOfAPackageAsksForAmxTilesBeforeLoadingIt) {
  // A bf16 package compiled on an AMX CPU died of SIGILL in a process that had not asked.
  const ApplySnippets s = make_apply_snippets(
      winner_run("threads=1,batch=8,precision=fp32,graph=aoti", "/runs/x/model.pt2", "64", "Float[1,64]"));
  const auto amx = s.cpp.find("at::cpu::init_amx();");
  ASSERT_NE(amx, std::string::npos) << s.cpp;
  EXPECT_LT(amx, s.cpp.find("AOTIModelPackageLoader loader")) << s.cpp;
}

TEST_F(ApplySnippetsTest, ARunWithoutAWinnerHasNothingToApply) {
  auto a = winner_run("threads=1", "builtin:mlp", "784", "Float[1,784]");
  a.winner.reset();
  EXPECT_THROW(make_apply_snippets(a), UsageError);
}

}  // namespace
}  // namespace torchperf

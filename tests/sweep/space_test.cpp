#include "torchperf/sweep/space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "support/test_support.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

WorkloadTraits image_model() { return testing::image_model_traits(); }

}  // namespace

TEST(SpaceTest, EveryApplicableKnobIsAnAxisAndTheProductIsResolved) {
  const Space s = build_space(image_model(), {});
  std::set<std::string> knobs;
  for (const auto& a : s.axes) knobs.insert(a.knob);
  EXPECT_TRUE(knobs.count("threads") && knobs.count("format") && knobs.count("graph"));
  EXPECT_FALSE(knobs.count("cudnn_benchmark")) << "CUDA-only knobs are not axes on CPU";
  std::set<std::string> keys;
  for (const auto& p : s.points) keys.insert(p.key);
  EXPECT_EQ(keys.size(), s.points.size()) << "points are unique once resolved";
  EXPECT_LE(s.points.size(), s.combinations);
  // An inference tune measures eval mode; train is left out, and the space says so.
  for (const auto& a : s.axes)
    if (a.knob == "mode") {
      EXPECT_EQ(a.values, (std::vector<std::string>{"eval"}));
    }
  ASSERT_FALSE(s.left_out.empty());
  EXPECT_NE(s.left_out.front().find("mode=train: an inference tune measures eval mode"),
            std::string::npos)
      << s.left_out.front();
}

TEST(SpaceTest, OnCudaThreadsAreNotSweptAndTheSpaceSaysWhy) {
  WorkloadTraits gpu = image_model();
  gpu.cuda = true;
  gpu.usable_cores = 16;
  gpu.default_threads = 16;
  const Space s = build_space(gpu, {});
  for (const auto& a : s.axes)
    if (a.knob == "threads") {
      EXPECT_EQ(a.values, (std::vector<std::string>{"16"}));
    }
  bool said = false;
  for (const auto& l : s.left_out) said |= l.find("threads=1,2,4,8: on a CUDA device") == 0;
  EXPECT_TRUE(said) << "left out: " << (s.left_out.empty() ? "nothing" : s.left_out.front());
  // Asked for, they are swept.
  const Space asked = build_space(gpu, {{"threads", {"1", "16"}}});
  for (const auto& a : asked.axes)
    if (a.knob == "threads") {
      EXPECT_EQ(a.values, (std::vector<std::string>{"1", "16"}));
    }
}

TEST(SpaceTest, ABuiltinOnCudaReachesEveryRuntimeAndStartsWhereTheGuidesDo) {
  WorkloadTraits gpu = testing::image_builtin_traits();
  gpu.cuda = true;
  const Space s = build_space(gpu, {});
  std::map<std::string, const SpaceAxis*> axes;
  for (const auto& a : s.axes) axes[a.knob] = &a;
  ASSERT_TRUE(axes.count("runtime") && axes.count("graph") && axes.count("cuda_graphs"));
  EXPECT_EQ(axes["runtime"]->values, (std::vector<std::string>{"cpp", "python"}));
  for (const char* g : {"frozen-opt", "aoti", "compile", "compile-reduce-overhead"})
    EXPECT_NE(std::find(axes["graph"]->values.begin(), axes["graph"]->values.end(), g),
              axes["graph"]->values.end())
        << g;
  // The guides' start: torch.compile with CUDA graphs, half weights, channels_last, in Python.
  EXPECT_EQ(axes["runtime"]->expert, "python");
  EXPECT_EQ(axes["graph"]->expert, "compile-reduce-overhead");
  EXPECT_EQ(axes["precision"]->expert, "fp16");
  EXPECT_EQ(axes["format"]->expert, "channels_last");
  // Each point keeps its own runtime's values: CUDA graphs in C++ are never a Python point's.
  for (const auto& p : s.points)
    if (p.key.find("runtime=python") != std::string::npos) {
      EXPECT_EQ(p.key.find("cuda_graphs=on"), std::string::npos) << p.key;
    }
}

TEST(SpaceTest, OnCudaAnEngineWithoutACudaProviderOrNotInstalledIsOneNoteEachAndNoPoint) {
  WorkloadTraits gpu = testing::image_builtin_traits();
  gpu.cuda = true;
  gpu.engines = {"onnxruntime"};  // as on the H200: a CPU-only onnxruntime, no OpenVINO
  const Space s = build_space(gpu, {});
  std::vector<std::string> notes;
  for (const auto& l : s.left_out)
    if (l.rfind("runtime=", 0) == 0) notes.push_back(l);
  ASSERT_EQ(notes.size(), 2u) << (notes.empty() ? "no note" : notes.front());
  EXPECT_NE(notes[0].find("runtime=onnxruntime: ONNX Runtime does not run on CUDA here"),
            std::string::npos)
      << notes[0];
  EXPECT_NE(notes[1].find("runtime=openvino: OpenVINO is not installed"), std::string::npos)
      << notes[1];
  for (const auto& p : s.points) EXPECT_EQ(p.key.find("runtime=o"), std::string::npos) << p.key;
  // Installed with a CUDA provider, it is swept and not noted.
  gpu.cuda_engines = {"onnxruntime"};
  for (const auto& l : build_space(gpu, {}).left_out)
    EXPECT_EQ(l.find("runtime=onnxruntime"), std::string::npos) << l;
}

TEST(SpaceTest, OnCudaTorchScriptsAutocastStartIsInTheFrozenGraphWhichTakesIt) {
  WorkloadTraits gpu = image_model();  // a TorchScript CNN: optimize_for_inference fuses for cuDNN
  gpu.cuda = true;
  const Space s = build_space(gpu, {});
  bool reduced = false;
  for (const auto& start : s.expert_starts) {
    if (!start.reduced_precision) continue;
    reduced = true;
    EXPECT_EQ(start.config.get("precision").value_or(""), "fp16-autocast");
    EXPECT_EQ(start.config.get("graph").value_or(""), "frozen")
        << "frozen-opt refuses autocast on CUDA; the start is not dropped but moves";
  }
  EXPECT_TRUE(reduced) << "the guides' half-precision start on a GPU";
}

TEST(SpaceTest, ADefaultSpaceOfATorchExportProgramSweepsBothRuntimesAndOnlyKnobsThatApply) {
  WorkloadTraits program = testing::image_program_traits();
  const Space s = build_space(program, {});
  std::map<std::string, std::vector<std::string>> axes;
  for (const auto& a : s.axes) axes[a.knob] = a.values;
  EXPECT_EQ(axes["runtime"], (std::vector<std::string>{"cpp", "python"}));
  EXPECT_EQ(axes["graph"], (std::vector<std::string>{"aoti", "aoti-max-autotune", "eager",
                                                     "compile", "compile-max-autotune"}));
  EXPECT_EQ(axes["precision"], (std::vector<std::string>{"fp32", "bf16", "bf16-autocast"}));
  EXPECT_EQ(axes["grad"], (std::vector<std::string>{"on", "inference"}))
      << "python's autograd modes; no_grad only when asked for";
  for (const auto* absent : {"mode", "conv_bias", "pad"})
    EXPECT_FALSE(axes.count(absent)) << absent << " applies in neither runtime";
  std::map<std::string, std::set<std::string>> graphs;
  for (const auto& p : s.points) {
    const ResolvedConfiguration r = resolve(p.config, program);
    graphs[r.value("runtime")].insert(r.value("graph"));
    if (r.value("runtime") == "cpp") {
      EXPECT_FALSE(r.knob("grad").applicable) << p.key;
      EXPECT_FALSE(r.knob("format").applicable) << p.key;
      EXPECT_NE(r.value("precision"), "bf16-autocast") << p.key;
    }
  }
  EXPECT_EQ(graphs["cpp"], (std::set<std::string>{"aoti", "aoti-max-autotune"}));
  EXPECT_EQ(graphs["python"], (std::set<std::string>{"eager", "compile", "compile-max-autotune"}));
  WorkloadTraits scripted = image_model();
  for (const auto& a : build_space(scripted, {}).axes)
    EXPECT_NE(a.knob, "runtime") << "a TorchScript model runs in Python when --space names it";
  EXPECT_EQ(careful_at(program, "8").to_string(), baseline_at("8").to_string())
      << "a program has no autograd to turn off";
}

TEST(SpaceTest, TheGuidesStartsOfAProgramOnACpuAreCompileWithChannelsLastAndTheAotiPackage) {
  const WorkloadTraits program = testing::image_program_traits();
  const Space s = build_space(program, {});
  std::set<std::string> keys;
  for (const auto& p : s.points) keys.insert(p.key);
  std::map<std::string, std::vector<const ExpertStart*>> by_runtime;
  for (const auto& start : s.expert_starts) {
    const ResolvedConfiguration r = resolve(start.config, program);
    EXPECT_TRUE(keys.count(r.to_string())) << "a start is a point of the space: " << r.to_string();
    EXPECT_EQ(runtime_of(r, program).name(), start.runtime);
    EXPECT_EQ(r.value("precision") != "fp32", start.reduced_precision) << r.to_string();
    by_runtime[start.runtime].push_back(&start);
  }
  ASSERT_EQ(by_runtime["python-compile"].size(), 2u);
  const ResolvedConfiguration compiled =
      resolve(by_runtime["python-compile"][0]->config, program);
  EXPECT_EQ(compiled.value("graph"), "compile");
  EXPECT_EQ(compiled.value("format"), "channels_last");
  EXPECT_EQ(compiled.value("grad"), "inference");
  EXPECT_EQ(compiled.value("precision"), "fp32");
  EXPECT_EQ(compiled.value("threads"), std::to_string(program.usable_cores));
  ASSERT_EQ(by_runtime["aoti"].size(), 2u);
  EXPECT_EQ(resolve(by_runtime["aoti"][0]->config, program).value("graph"), "aoti");
  EXPECT_EQ(resolve(by_runtime["aoti"][1]->config, program).value("precision"), "bf16");
  // A space pinned to one graph has that runtime's start only.
  const Space pinned = build_space(program, {{"runtime", {"python"}}, {"graph", {"compile"}}});
  for (const auto& start : pinned.expert_starts) EXPECT_EQ(start.runtime, "python-compile");
  EXPECT_FALSE(pinned.expert_starts.empty());
}

// bf16 is emulated, slower than fp32, on a CPU without bf16 instructions: its start waits for the
// sweep. int8-static runs VNNI/AVX2 int8 kernels on any x86 CPU: its start is kept in that order.
TEST(SpaceTest, OnACpuWithoutBf16TheInt8StartIsKeptAndTheBf16StartsAreNot) {
#if !defined(__x86_64__) && !defined(_M_X64)
  GTEST_SKIP() << "int8-static applies on x86 CPUs only";
#endif
  WorkloadTraits program = testing::image_program_traits();
  program.engines = {"torchao"};
  const Space s = build_space(program, {});
  std::vector<std::string> reduced;
  for (const auto& start : s.expert_starts)
    if (start.reduced_precision)
      reduced.push_back(resolve(start.config, program).value("precision"));
  ASSERT_NE(std::find(reduced.begin(), reduced.end(), "int8-static"), reduced.end())
      << "the Python runtime's reduced start on a CNN is int8-static";
  ASSERT_NE(std::find(reduced.begin(), reduced.end(), "bf16"), reduced.end());
  std::vector<std::string> ordered;
  for (const std::size_t i : expert_start_order(s, program, {"avx2", "avx512_vnni"}))
    ordered.push_back(s.points[i].key);
  std::vector<std::string> with_bf16;
  for (const std::size_t i : expert_start_order(s, program, {"avx2", "avx512_bf16"}))
    with_bf16.push_back(s.points[i].key);
  const auto count = [](const std::vector<std::string>& keys, const std::string& value) {
    return std::count_if(keys.begin(), keys.end(), [&](const std::string& k) {
      return k.find("precision=" + value) != std::string::npos;
    });
  };
  EXPECT_EQ(count(ordered, "int8-static"), 1);
  EXPECT_EQ(count(ordered, "bf16"), 0) << "bf16 is no start where the CPU emulates it";
  EXPECT_GE(count(with_bf16, "bf16"), 1);
  EXPECT_EQ(count(with_bf16, "int8-static"), 1);
}

TEST(SpaceTest, ASpaceOverBothRuntimesKeepsEachPointToItsOwnRuntimesValues) {
  WorkloadTraits program = testing::image_program_traits();
  const Space s = build_space(program, {{"runtime", {"cpp", "python"}}, {"threads", {"1"}}});
  std::map<std::string, std::vector<std::string>> axes;
  for (const auto& a : s.axes) axes[a.knob] = a.values;
  EXPECT_EQ(axes["graph"], (std::vector<std::string>{"aoti", "aoti-max-autotune", "eager",
                                                     "compile", "compile-max-autotune"}));
  std::set<std::string> cpp_graphs, python_graphs;
  for (const auto& p : s.points) {
    const ResolvedConfiguration r = resolve(p.config, program);
    (r.value("runtime") == "python" ? python_graphs : cpp_graphs).insert(r.value("graph"));
    if (r.value("runtime") == "cpp") {
      EXPECT_FALSE(r.knob("grad").applicable) << p.key;
    }
  }
  EXPECT_EQ(cpp_graphs, (std::set<std::string>{"aoti", "aoti-max-autotune"}));
  EXPECT_EQ(python_graphs, (std::set<std::string>{"eager", "compile", "compile-max-autotune"}));
  EXPECT_THROW(build_space(program, {{"runtime", {"cpp"}}, {"graph", {"compile"}}}), ConfigError)
      << "a python value without runtime=python on the axis";
}

TEST(SpaceTest, AStaticProgramsBatchIsNotAnAxis) {
  WorkloadTraits program = testing::image_program_traits();
  program.dynamic_batch = false;
  program.default_batch = 4;
  program.program.dynamic = false;
  program.program.exported = 4;
  const Space s = build_space(program, {});
  for (const auto& a : s.axes) EXPECT_NE(a.knob, "batch");
  EXPECT_THROW(build_space(program, {{"batch", {"8"}}}), ConfigError);
}

TEST(SpaceTest, RestrictionsNarrowTheAxesAndTheProduct) {
  const Space s = build_space(
      image_model(), {{"precision", {"fp32", "bf16"}}, {"graph", {"eager"}}, {"threads", {"1"}},
                      {"batch", {"8"}}, {"mode", {"eval"}}, {"grad", {"no_grad"}},
                      {"format", {"contiguous", "channels_last"}}});
  EXPECT_EQ(s.points.size(), 4u);
  EXPECT_EQ(s.combinations, 4u);
  EXPECT_EQ(s.origin.get("batch").value_or(""), "8") << "a pinned knob starts where it is pinned";
  int origins = 0;
  for (const auto& p : s.points) origins += p.changes == 0;
  EXPECT_EQ(origins, 1);
}

TEST(SpaceTest, UnknownKnobsAndValuesAndInapplicableOnesAreRefused) {
  EXPECT_THROW(build_space(image_model(), {{"speed", {"max"}}}), ConfigError);
  EXPECT_THROW(build_space(image_model(), {{"precision", {"fp64"}}}), ConfigError);
  try {
    build_space(image_model(), {{"workers", {"0", "1"}}});
    ADD_FAILURE() << "a training knob was swept by tune";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("workers: not a knob of tune"), std::string::npos)
        << e.what();
  }
  try {
    build_space(image_model(), {{"graph", {"fused"}}});
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("graph=fused does not apply"), std::string::npos)
        << e.what();
  }
}

TEST(SpaceTest, AValueThatNoRuntimeSweptTakesIsRefusedNamingTheRuntimeThatWould) {
  WorkloadTraits program = testing::image_program_traits();
  try {
    build_space(program, {{"runtime", {"python"}}, {"graph", {"eager", "aoti"}}});
    ADD_FAILURE() << "graph=aoti was swept with runtime=python alone";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "--space graph=aoti does not apply to runtime=python, the runtime swept: "),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("add its family to the runtime axis"), std::string::npos)
        << e.what();
  }
  // Both runtimes swept: each value has a runtime that takes it, and no point is refused.
  EXPECT_NO_THROW(build_space(program, {{"runtime", {"cpp", "python"}}, {"graph", {"eager", "aoti"}}}));
}

TEST(SpaceTest, AValueAskedForIsNeverSwappedForAnotherWhereAPointsRuntimeRefusesIt) {
  // A built-in runs in C++ as TorchScript (any batch) and in Python as its program (batch
  // 1..4096): Python points are left out at a batch outside that range, never run at batch 1.
  const WorkloadTraits builtin = testing::image_builtin_traits();
  const Space big = build_space(builtin, {{"runtime", {"cpp", "python"}}, {"batch", {"1000000"}}});
  ASSERT_FALSE(big.points.empty());
  for (const auto& p : big.points) {
    EXPECT_EQ(runtime_of(resolve(p.config, builtin), builtin).name(), "torchscript") << p.key;
    EXPECT_NE(p.key.find("batch=1000000"), std::string::npos) << p.key;
  }
  // One note for every runtime that runs the program: AOTInductor and both of Python's.
  std::vector<std::string> batch_notes;
  for (const auto& l : big.left_out)
    if (l.rfind("batch=", 0) == 0) batch_notes.push_back(l);
  ASSERT_EQ(batch_notes.size(), 1u);
  const std::string& note = batch_notes[0];
  EXPECT_EQ(note.rfind("batch=1000000 does not apply to ", 0), 0u) << note;
  for (const char* runtime : {"AOTInductor", "Python eager", "Python torch.compile"})
    EXPECT_NE(note.find(runtime), std::string::npos) << note;
  EXPECT_NE(note.find("(outside the batch range the program was exported with"),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("its points are left out, not run at another batch"), std::string::npos);
  // A TorchScript graph pinned: Python points are left out, not run eagerly.
  const Space frozen = build_space(builtin, {{"runtime", {"cpp", "python"}}, {"graph", {"frozen"}}});
  for (const auto& p : frozen.points)
    EXPECT_EQ(resolve(p.config, builtin).value("graph"), "frozen") << p.key;
  ASSERT_FALSE(frozen.left_out.empty());
  EXPECT_NE(frozen.left_out.back().find("graph=frozen does not apply to Python"),
            std::string::npos)
      << frozen.left_out.back();
  // Values for each runtime on one axis are the way to sweep across runtimes: a runtime that
  // takes one of them is not noted for the others.
  const Space both = build_space(
      builtin, {{"runtime", {"cpp", "python"}}, {"graph", {"frozen", "compile"}}, {"batch", {"8"}}});
  for (const auto& l : both.left_out) EXPECT_EQ(l.rfind("graph=", 0), std::string::npos) << l;
  std::set<std::string> graphs;
  for (const auto& p : both.points) graphs.insert(resolve(p.config, builtin).value("graph"));
  EXPECT_EQ(graphs, (std::set<std::string>{"frozen", "compile"}));
  // Every point refused: the error says why.
  try {
    build_space(builtin, {{"runtime", {"python"}}, {"batch", {"1000000"}}});
    ADD_FAILURE() << "a space of Python points outside the program's range";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("batch=1000000"), std::string::npos) << e.what();
  }
}

TEST(SpaceTest, InformativeOrderPutsTheOriginThenSingleChangesFirstAndIsSeeded) {
  const Space s = build_space(image_model(), {{"batch", {"1"}}, {"threads", {"1", "2"}}});
  const auto order = informative_order(s, 1);
  ASSERT_EQ(order.size(), s.points.size());
  EXPECT_EQ(s.points[order[0]].changes, 0);
  bool past_singles = false;
  for (std::size_t i = 1; i < order.size(); ++i) {
    if (s.points[order[i]].changes > 1) past_singles = true;
    if (past_singles) {
      EXPECT_GT(s.points[order[i]].changes, 1) << i;
    }
  }
  EXPECT_EQ(order, informative_order(s, 1));
  EXPECT_NE(order, informative_order(s, 2));
  EXPECT_EQ(std::set<std::size_t>(order.begin(), order.end()).size(), order.size());
}

TEST(SpaceTest, BaselineAndCarefulAreNamedAtABatch) {
  EXPECT_EQ(baseline_at("8").to_string(), "batch=8");
  EXPECT_TRUE(baseline_at("n/a").empty());
  EXPECT_EQ(careful_at(image_model(), "8").to_string(), "batch=8,mode=eval,grad=no_grad");
}

}  // namespace torchperf

namespace torchperf {

TEST(SpaceTest, AStreamsFirstStartInEachRuntimeIsTheCarefulPersonsSortedWindowPaddedToEachLongest) {
  WorkloadTraits program = testing::image_program_traits();
  program.named_dims = {"S"};
  program.suggested_buckets = "buckets:48/96/450";
  const Space s = build_space(program, {});
  std::map<std::string, std::vector<std::string>> by_runtime;
  for (const auto& start : s.expert_starts) {
    if (start.reduced_precision) continue;
    const ResolvedConfiguration r = resolve(start.config, program);
    by_runtime[start.runtime].push_back(r.value("padding") + " " + r.value("batching"));
  }
  ASSERT_FALSE(by_runtime.empty());
  for (const auto& [runtime, starts] : by_runtime)
    EXPECT_EQ(starts, (std::vector<std::string>{"batch-max sorted:256",
                                                "buckets:48/96/450 sorted:256"}))
        << runtime;
}

TEST(SpaceTest, TheCarefulConfigurationOfAStreamSortsEachWindowAndPadsEachBatchToItsLongest) {
  WorkloadTraits program = testing::image_program_traits();
  program.named_dims = {"S"};
  const ResolvedConfiguration careful = resolve(careful_at(program, "16"), program);
  EXPECT_EQ(careful.value("batching"), "sorted:256");
  EXPECT_EQ(careful.value("padding"), "batch-max");
  EXPECT_EQ(resolve(baseline_at("16"), program).value("batching"), "arrival")
      << "the baseline stays every knob at its baseline value";
  EXPECT_FALSE(careful_at(testing::image_program_traits(), "16").get("batching"))
      << "fixed shapes have no batching to choose";
}

}  // namespace torchperf

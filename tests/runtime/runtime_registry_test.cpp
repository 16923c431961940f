// The registry of runtimes: each found by name, and picked by family, graph value and model forms.
#include <gtest/gtest.h>

#include "support/test_support.h"
#include "torchperf/error.h"
#include "torchperf/runtime/runtime.h"

namespace torchperf {
namespace {

WorkloadTraits program_only() { return testing::image_program_traits(); }
WorkloadTraits both_forms() { return testing::image_builtin_traits(); }

}  // namespace

TEST(RuntimeRegistryTest, EveryRuntimeIsRegisteredOnceUnderItsName) {
  std::set<std::string> names;
  for (const Runtime* r : runtimes()) {
    EXPECT_TRUE(names.insert(r->name()).second) << r->name();
    EXPECT_EQ(&runtime_named(r->name()), r);
    EXPECT_FALSE(r->label().empty());
  }
  EXPECT_EQ(names, (std::set<std::string>{"torchscript", "aoti", "python-eager", "python-compile",
                                          "python-aoti", "onnxruntime", "openvino"}));
}

TEST(RuntimeRegistryTest, AnUnknownNameIsRefusedNamingTheKnownOnes) {
  try {
    runtime_named("onnx");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("torchscript, aoti, python-eager, python-compile"),
              std::string::npos)
        << e.what();
  }
  try {
    runtime_for("java", "", both_forms());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("expected cpp, python, onnxruntime, openvino"),
              std::string::npos)
        << e.what();
  }
}

TEST(RuntimeRegistryTest, WithinAFamilyTheGraphValuePicksTheRuntime) {
  const WorkloadTraits t = both_forms();
  EXPECT_EQ(runtime_for("cpp", "frozen-opt", t).name(), "torchscript");
  EXPECT_EQ(runtime_for("cpp", "aoti-max-autotune", t).name(), "aoti");
  EXPECT_EQ(runtime_for("python", "eager", t).name(), "python-eager");
  EXPECT_EQ(runtime_for("python", "compile-reduce-overhead", t).name(), "python-compile");
}

TEST(RuntimeRegistryTest, WithoutAGraphValueTheModelsFormsPickTheCppRuntime) {
  EXPECT_EQ(runtime_for("cpp", "", testing::image_model_traits()).name(), "torchscript");
  EXPECT_EQ(runtime_for("cpp", "", program_only()).name(), "aoti");
  EXPECT_EQ(runtime_for("cpp", "n/a", both_forms()).name(), "torchscript");
  EXPECT_EQ(runtime_for("python", "", program_only()).name(), "python-eager");
}

TEST(RuntimeRegistryTest, AFamilyListsOnlyTheRuntimesThatTakeTheModel) {
  std::vector<std::string> cpp;
  for (const Runtime* r : family_runtimes("cpp", both_forms())) cpp.push_back(r->name());
  EXPECT_EQ(cpp, (std::vector<std::string>{"torchscript", "aoti"}));
  std::vector<std::string> python;
  for (const Runtime* r : family_runtimes("python", testing::image_model_traits()))
    python.push_back(r->name());
  EXPECT_EQ(python, (std::vector<std::string>{"python-eager"}))
      << "torch.compile does not trace a TorchScript module";
}

TEST(RuntimeRegistryTest, AJournalKeyNamesItsRuntimeWithoutTheModel) {
  EXPECT_EQ(runtime_of_key("threads=2,batch=8,graph=frozen-opt").name(), "torchscript");
  EXPECT_EQ(runtime_of_key("threads=2,batch=8,graph=aoti").name(), "aoti");
  EXPECT_EQ(runtime_of_key("runtime=python,threads=2,graph=compile").name(), "python-compile");
  EXPECT_EQ(runtime_of_key("runtime=python,threads=2,graph=eager").worker(),
            RuntimeWorker::kPython);
  EXPECT_EQ(runtime_of_key("threads=1").name(), "torchscript") << "an older key names no graph";
}

TEST(RuntimeRegistryTest, AViewShowsTheModelInTheFormTheRuntimeRuns) {
  WorkloadTraits t = both_forms();
  t.program.min = 2;
  t.program.max = 0;
  t.program.shape = "x: float32[batch,3,224,224] (batch 2..any)";
  const WorkloadTraits aoti = runtime_named("aoti").view(t);
  EXPECT_TRUE(aoti.exported_program);
  EXPECT_FALSE(aoti.torchscript);
  EXPECT_FALSE(aoti.can_train_mode);
  EXPECT_EQ(aoti.batch_min, 2);
  EXPECT_EQ(aoti.default_batch, 2) << "the smallest batch the program takes";
  EXPECT_EQ(aoti.runtime, "aoti");
  const WorkloadTraits ts = runtime_named("torchscript").view(t);
  EXPECT_TRUE(ts.torchscript);
  EXPECT_FALSE(ts.exported_program);
  EXPECT_EQ(ts.batch_min, 1);
}

}  // namespace torchperf

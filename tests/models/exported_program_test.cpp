#include "torchperf/models/exported_program.h"

#include <gtest/gtest.h>

#include "support/test_support.h"
#include "torchperf/error.h"

namespace torchperf {

using testing::fixture;

TEST(ExportedProgramTest, TellsTheKindsOfPyTorchArchiveApartByTheirRecords) {
  EXPECT_EQ(archive_kind(fixture("mlp_dynamic.pt2")), ArchiveKind::kExportedProgram);
  EXPECT_EQ(archive_kind(fixture("resnet18_scripted.pt")), ArchiveKind::kTorchScript);
  EXPECT_EQ(archive_kind(fixture("state_dict.pt")), ArchiveKind::kTorchSave);
  EXPECT_THROW(archive_kind(fixture("other.zip")), ModelError);
}

TEST(ExportedProgramTest, ReadsADynamicBatchAndItsRangeFromTheProgram) {
  const ProgramSignature sig = read_program_signature(fixture("mlp_dynamic.pt2"));
  ASSERT_EQ(sig.inputs.size(), 1u);
  EXPECT_EQ(sig.inputs[0].name, "input");
  EXPECT_EQ(sig.inputs[0].dtype, DType::kFloat32);
  EXPECT_EQ(sig.inputs[0].sizes, (std::vector<std::int64_t>{2, 32}));
  EXPECT_EQ(sig.inputs[0].dynamic, (std::vector<bool>{true, false}));
  EXPECT_TRUE(sig.dynamic_batch);
  EXPECT_EQ(sig.batch_min, 1);
  EXPECT_EQ(sig.batch_max, 4096);
  EXPECT_TRUE(sig.linear);
  EXPECT_FALSE(sig.convolutional);
  EXPECT_EQ(to_string(sig.input_spec()), "32");
  EXPECT_EQ(sig.describe(), "input: float32[batch,32] (batch 1..4096)");
}

TEST(ExportedProgramTest, AStaticProgramKeepsTheBatchItWasExportedWith) {
  const ProgramSignature sig = read_program_signature(fixture("exported.pt2"));
  EXPECT_FALSE(sig.dynamic_batch);
  EXPECT_EQ(sig.exported_batch, 2);
  EXPECT_EQ(sig.describe(), "input: float32[2,32] (static batch 2)");
}

TEST(ExportedProgramTest, SeesTheConvolutionsOfAConvolutionalProgram) {
  const ProgramSignature sig = read_program_signature(fixture("resnet18_dynamic.pt2"));
  EXPECT_TRUE(sig.convolutional);
  EXPECT_EQ(to_string(sig.input_spec()), "3x224x224");
}

TEST(ExportedProgramTest, ABatchExportedAsDimDynamicIsReadAsUnbounded) {
  // Dim.DYNAMIC writes the range [2, inf] with a null max: the most common export.
  const ProgramSignature sig = read_program_signature(fixture("mlp_dim_dynamic.pt2"));
  EXPECT_TRUE(sig.dynamic_batch);
  EXPECT_EQ(sig.batch_min, 2);
  EXPECT_EQ(sig.batch_max, 0) << "no upper bound";
  EXPECT_EQ(sig.describe(), "input: float32[batch,32] (batch 2..any)");
}

TEST(ExportedProgramTest, ADamagedProgramIsAModelErrorNamingTheFile) {
  try {
    read_program_signature(fixture("corrupt_program.pt2"));
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find(fixture("corrupt_program.pt2")), std::string::npos);
  }
}

TEST(ExportedProgramTest, AProgramTakingAPythonNumberIsAModelErrorNamingTheArgument) {
  try {
    read_program_signature(fixture("int_argument.pt2"));
    FAIL() << "a program with a constant input was read as one taking tensors alone";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("takes a non-tensor input 'times' (exported as the "
                                         "constant 3)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace torchperf

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

TEST(ExportedProgramTest, ReadsADynamicLengthAndItsRangeBesideTheBatch) {
  const ProgramSignature sig = read_program_signature(fixture("token_pool_dynamic.pt2"));
  ASSERT_EQ(sig.inputs.size(), 2u);
  ASSERT_TRUE(sig.range_of(0, 1).has_value());
  EXPECT_EQ(sig.range_of(0, 1)->min, 2);
  EXPECT_EQ(sig.range_of(0, 1)->max, 256);
  EXPECT_EQ(sig.inputs[0].symbols[1], sig.inputs[1].symbols[1]) << "one Dim shared by both inputs";
  EXPECT_NE(sig.inputs[0].symbols[0], sig.inputs[0].symbols[1]);
  EXPECT_EQ(sig.batch_max, 4096) << "the batch's range is not the length's";
  EXPECT_EQ(sig.describe(),
            "input_ids: int64[batch,2..256], attention_mask: int64[batch,2..256] (batch 1..4096)");
  EXPECT_FALSE(read_program_signature(fixture("token_pool_static.pt2")).range_of(0, 1).has_value());
}

TEST(ExportedProgramTest, AProgramTakesAStreamWhoseLengthsLieWithinItsDynamicRange) {
  const InputSpec spec = parse_input_spec("int64:S@0..1000;int64:S@1..2");
  const ProgramSignature dynamic = read_program_signature(fixture("token_pool_dynamic.pt2"));
  EXPECT_NO_THROW(check_program_takes(dynamic, spec, {parse_dim_option("S=2..256")}, "m.pt2"));
  try {
    check_program_takes(dynamic, spec, {parse_dim_option("S=8..512")}, "m.pt2");
    FAIL() << "a distribution past the program's range was taken";
  } catch (const WorkloadError& e) {
    EXPECT_NE(std::string(e.what()).find("S=8..512 gives sizes 8..512, outside the range input "
                                         "'input_ids' dimension 1 was exported with (2..256)"),
              std::string::npos)
        << e.what();
  }
}

TEST(ExportedProgramTest, AProgramExportedWithAStaticLengthRefusesAStreamSayingHowToExportIt) {
  const ProgramSignature fixed = read_program_signature(fixture("token_pool_static.pt2"));
  try {
    check_program_takes(fixed, parse_input_spec("int64:S@0..1000;int64:S@1..2"),
                        {parse_dim_option("S=4..200")}, "m.pt2");
    FAIL() << "a static length took a stream";
  } catch (const WorkloadError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("input 'input_ids' dimension 1 was exported static (size 32)"),
              std::string::npos) << message;
    EXPECT_NE(message.find("torch.export.Dim('S', min=4, max=200)"), std::string::npos) << message;
  }
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

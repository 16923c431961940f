#include "torchperf/feed/inputs.h"

#include <gtest/gtest.h>
#include <torch/serialize.h>

#include <filesystem>
#include <fstream>

#include "support/test_support.h"
#include "torchperf/error.h"

namespace torchperf {

TEST(InputsTest, PrependsTheBatchDimension) {
  const auto inputs = make_inputs(parse_input_spec("3x8x8;int64:5@0..7"), 4, 0);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].toTensor().sizes(), (std::vector<std::int64_t>{4, 3, 8, 8}));
  EXPECT_EQ(inputs[1].toTensor().scalar_type(), at::kLong);
  EXPECT_GE(inputs[1].toTensor().min().item<std::int64_t>(), 0);
  EXPECT_LT(inputs[1].toTensor().max().item<std::int64_t>(), 7);
}

TEST(InputsTest, TheSameSeedGivesTheSameData) {
  const auto spec = parse_input_spec("16");
  EXPECT_TRUE(
      at::equal(make_inputs(spec, 2, 3)[0].toTensor(), make_inputs(spec, 2, 3)[0].toTensor()));
  EXPECT_FALSE(
      at::equal(make_inputs(spec, 2, 3)[0].toTensor(), make_inputs(spec, 2, 4)[0].toTensor()));
}

TEST(InputsTest, RejectsANonPositiveBatch) {
  EXPECT_THROW(make_inputs(parse_input_spec("4"), 0, 0), UsageError);
}

TEST(InputsTest, LoadsATensorSavedFromPython) {
  const auto inputs = load_inputs_file(testing::fixture("inputs_image.pt"));
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0].toTensor().sizes(), (std::vector<std::int64_t>{2, 3, 224, 224}));
}

TEST(InputsTest, LoadsATupleOfTensorsSavedFromPython) {
  EXPECT_EQ(load_inputs_file(testing::fixture("inputs_pair.pt")).size(), 2u);
}

TEST(InputsTest, RefusesFilesThatHoldNoTensors) {
  EXPECT_THROW(load_inputs_file(testing::fixture("inputs_dict.pt")), ModelError);
  EXPECT_THROW(load_inputs_file(testing::fixture("not_a_model.txt")), ModelError);
  EXPECT_THROW(load_inputs_file("/nonexistent.pt"), ModelError);
}

TEST(InputsTest, AFileOfSamplesNamesTheDimensionThatVariesWithTheSamplesOwnSizes) {
  const auto samples = load_input_samples(testing::fixture("token_samples.pt"));
  ASSERT_TRUE(samples.has_value());
  ASSERT_EQ(samples->samples.size(), 48u);
  // A dict per sample: forward's argument names, in the file's order (the mask first).
  EXPECT_EQ(to_string(samples->spec), "attention_mask=int64:S@1..2;input_ids=int64:S@0..100");
  ASSERT_EQ(samples->dims.size(), 1u) << "the ids and their mask share one length";
  const LengthDistribution& s = samples->dims[0].distribution;
  EXPECT_EQ(s.kind, LengthDistribution::Kind::kFile);
  EXPECT_EQ(s.min, 3);
  EXPECT_EQ(s.max, 62);
  EXPECT_EQ(s.lengths[5], samples->samples[5][1].size(0));
  EXPECT_TRUE(holds_input_samples(testing::fixture("token_samples.pt")));
  EXPECT_FALSE(holds_input_samples(testing::fixture("inputs_pair.pt")));
  EXPECT_FALSE(load_input_samples(testing::fixture("inputs_image.pt")).has_value());
}

TEST(InputsTest, SamplesThatDisagreeInRankOrDtypeAreAModelErrorNamingTheSample) {
  const auto message = [](const std::string& file) {
    try {
      load_input_samples(testing::fixture(file));
    } catch (const ModelError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("token_samples_rank.pt").find("sample 5 (attention_mask Long[1,9], "
                                                  "input_ids Long[9]) and sample 0"),
            std::string::npos);
  EXPECT_NE(message("token_samples_rank.pt").find("differ in the rank of input 0"), std::string::npos);
  EXPECT_NE(message("token_samples_dtype.pt").find("sample 2 (attention_mask Float[9]"),
            std::string::npos);
  EXPECT_NE(message("token_samples_dtype.pt").find("differ in the dtype of input 0"),
            std::string::npos);
}

namespace {

// Tensors saved as torch.save saves a tuple of them, in the test's temporary folder.
std::string saved(const std::vector<at::Tensor>& tensors, const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / ("torchperf-calibration-" + name);
  const auto bytes = torch::pickle_save(
      c10::ivalue::Tuple::create(std::vector<c10::IValue>(tensors.begin(), tensors.end())));
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path.string();
}

std::string refusal(const std::string& path, const InputSpec* spec,
                    const std::vector<c10::IValue>& file_inputs = {}) {
  try {
    check_calibration_file(path, spec, file_inputs);
  } catch (const WorkloadError& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST(InputsTest, ACalibrationFileIsCheckedAgainstWhatTheModelIsFedNamingTheFirstInputThatDiffers) {
  const InputSpec spec = parse_input_spec("3x8x8;int64:S@0..7");
  const auto ids = [](std::int64_t n, std::int64_t s) { return at::zeros({n, s}, at::kLong); };
  // The named dimension may take any size; the samples are counted.
  EXPECT_EQ(check_calibration_file(saved({at::rand({20, 3, 8, 8}), ids(20, 11)}, "ok.pt"), &spec,
                                   {}),
            20);
  const std::string shape = refusal(saved({at::rand({20, 3, 16, 16}), ids(20, 5)}, "shape.pt"), &spec);
  EXPECT_EQ(shape.rfind("--calibration '", 0), 0u) << shape;
  EXPECT_NE(shape.find("input 0 is Float[20,3,16,16]; the model is fed 3x8x8;int64:S@0..7"),
            std::string::npos)
      << shape;
  // Issue 84's probe: a dtype error is named as one, and a file of no samples is refused.
  EXPECT_NE(refusal(saved({at::rand({20, 3, 8, 8}, at::kDouble), ids(20, 5)}, "dtype.pt"), &spec)
                .find("input 0 is of dtype Double (Double[20,3,8,8]), where the model takes Float"),
            std::string::npos);
  EXPECT_NE(refusal(saved({at::rand({0, 3, 8, 8}), ids(0, 5)}, "empty.pt"), &spec)
                .find("it holds 0 samples"),
            std::string::npos);
  EXPECT_NE(refusal(saved({at::rand({20, 3, 8, 8})}, "count.pt"), &spec).find("1 tensor(s)"),
            std::string::npos);
  EXPECT_NE(refusal(saved({at::rand({20, 3, 8, 8}), ids(7, 5)}, "samples.pt"), &spec)
                .find("different numbers of samples"),
            std::string::npos);
  // Against an inputs file: its tensors' sizes but the batch.
  const auto file = load_inputs_file(testing::fixture("inputs_image.pt"));
  EXPECT_EQ(refusal(saved({at::rand({5, 3, 224, 224})}, "file.pt"), nullptr, file), "accepted");
  EXPECT_NE(refusal(saved({at::rand({5, 3, 32, 32})}, "file-shape.pt"), nullptr, file)
                .find("the model is fed Float[2,3,224,224]"),
            std::string::npos);
  // A file that holds no tensors is the model part's error, named as --calibration's.
  try {
    check_calibration_file(testing::fixture("inputs_dict.pt"), &spec, {});
    FAIL() << "accepted";
  } catch (const ModelError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--calibration '", 0), 0u) << e.what();
  }
}

TEST(InputsTest, DescribesShapesAndDtypes) {
  const auto inputs = make_inputs(parse_input_spec("3x2;int64:4"), 2, 0);
  EXPECT_EQ(describe_inputs(inputs), "Float[2,3,2]; Long[2,4]");
}

}  // namespace torchperf

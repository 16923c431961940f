#include "torchperf/models/model.h"

#include <gtest/gtest.h>

#include <fstream>

#include "support/test_support.h"
#include "torchperf/compat/torch_compat.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

using testing::fixture;

std::string model_error(const std::string& path) {
  try {
    open_model(path)->load();
  } catch (const ModelError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(ModelTest, LoadsAScriptedTorchvisionModel) {
  auto model = open_model(fixture("resnet18_scripted.pt"))->load();
  ASSERT_NE(model->as_torchscript(), nullptr);
  EXPECT_EQ(model->input_names(), std::vector<std::string>{"x"});
  EXPECT_FALSE(model->is_training());
  EXPECT_TRUE(model->as_torchscript()->uses_operator("aten::_convolution") ||
              model->as_torchscript()->uses_operator("aten::conv2d"));
}

TEST(ModelTest, KnowsTheTrainingFlagAModelWasSavedWith) {
  EXPECT_TRUE(open_model(fixture("resnet18_train_scripted.pt"))->load()->is_training());
}

TEST(ModelTest, NamesEveryForwardArgument) {
  auto model = open_model(fixture("two_inputs.pt"))->load();
  EXPECT_EQ(model->input_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(model->required_inputs(), 2u);
}

TEST(ModelTest, ArgumentsWithDefaultsAreOptional) {
  auto model = open_model(fixture("transformer_scripted.pt"))->load();
  EXPECT_EQ(model->input_names(),
            (std::vector<std::string>{"src", "mask", "src_key_padding_mask", "is_causal"}));
  EXPECT_EQ(model->required_inputs(), 1u);
}

TEST(ModelTest, SaysWhenTheFileDoesNotExist) {
  EXPECT_THROW(open_model("/nonexistent/model.pt"), ModelError);
}

TEST(ModelTest, ExplainsWhatAFileIsWhenItIsNotTorchScript) {
  EXPECT_NE(model_error(fixture("not_a_model.txt")).find("not a TorchScript archive"),
            std::string::npos);
  EXPECT_NE(model_error(fixture("other.zip")).find("not a PyTorch archive"), std::string::npos);
  EXPECT_NE(model_error(fixture("truncated.pt")).find("truncated"), std::string::npos);
  EXPECT_NE(model_error(fixture("state_dict.pt")).find("torch.save file"), std::string::npos);
}

TEST(ModelTest, EveryLoadErrorNamesTheFile) {
  for (const auto* name : {"not_a_model.txt", "other.zip", "truncated.pt", "state_dict.pt",
                           "truncated.pt2", "corrupt_program.pt2", "newer_torch.pt"}) {
    const std::string path = fixture(name);
    EXPECT_NE(model_error(path).find(path), std::string::npos) << name;
  }
}

TEST(ModelTest, OpensATorchExportProgramWithItsSignatureAndNoDeprecationNotice) {
  const auto source = open_model(fixture("mlp_dynamic.pt2"));
  ASSERT_TRUE(source->default_inputs());
  EXPECT_EQ(to_string(*source->default_inputs()), "32");
  auto model = source->load();
  EXPECT_EQ(model->as_torchscript(), nullptr);
  ASSERT_NE(model->as_exported(), nullptr);
  EXPECT_EQ(model->input_names(), std::vector<std::string>{"input"});
  EXPECT_FALSE(model->is_training());
}

TEST(ModelTest, RefusesADamagedProgramAndAnAotiPackageNamingWhatTheyAre) {
  EXPECT_NE(model_error(fixture("truncated.pt2")).find("truncated"), std::string::npos);
  EXPECT_NE(model_error(fixture("corrupt_program.pt2")).find("not a readable torch.export program"),
            std::string::npos)
      << model_error(fixture("corrupt_program.pt2"));
}

TEST(ModelTest, SaysAFileFromANewerPyTorchIsNewerAndHowToFixIt) {
  const std::string error = model_error(fixture("newer_torch.pt"));
  EXPECT_NE(error.find("saved by a newer PyTorch than this LibTorch " + compat::torch_version()),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("file format version 99, this LibTorch reads up to"), std::string::npos)
      << error;
  EXPECT_NE(error.find("TORCHPERF_LIBTORCH"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(ModelTest, ATorchScriptFileGetsTheDeprecationNoticeAndOtherInputsDoNot) {
  const std::string notice = model_format_notice(fixture("resnet18_scripted.pt"));
  EXPECT_NE(notice.find("TorchScript is deprecated"), std::string::npos) << notice;
  EXPECT_NE(notice.find(".pt2"), std::string::npos) << notice;
  for (const std::string& other : {std::string("builtin:mlp"), fixture("state_dict.pt"),
                                  fixture("not_a_model.txt"), fixture("exported.pt2"),
                                  std::string("/nonexistent/model.pt")})
    EXPECT_EQ(model_format_notice(other), "") << other;
}

TEST(ModelTest, OpensBuiltinsByName) {
  auto source = open_model("builtin:mlp");
  EXPECT_EQ(source->name(), "builtin:mlp");
  ASSERT_TRUE(source->default_inputs().has_value());
  EXPECT_THROW(open_model("builtin:nope"), UsageError);
}

TEST(ModelTest, LoadingTwiceGivesIndependentCopies) {
  auto source = open_model("builtin:mlp");
  auto a = source->load();
  auto b = source->load();
  a->set_training(true);
  EXPECT_FALSE(b->is_training());
}

}  // namespace torchperf

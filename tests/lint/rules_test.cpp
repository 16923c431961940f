#include "torchperf/lint/lint.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <cstdlib>
#include <set>

#include "support/test_support.h"
#include "torchperf/error.h"
#include "torchperf/models/builtin_models.h"

namespace torchperf {
namespace {

using testing::fixture;

std::vector<Finding> with_rule(const std::vector<Finding>& findings, const std::string& rule) {
  std::vector<Finding> out;
  for (const auto& f : findings)
    if (f.rule == rule) out.push_back(f);
  return out;
}

LintContext avx2() {
  LintContext c;
  c.cpu_isa = {"avx", "avx2", "fma"};
  return c;
}

// A module written in TorchScript here, for rules the fixtures do not exercise.
torch::jit::Module scripted(const std::string& source) {
  torch::jit::Module m("__torch__.LintProbe");
  m.register_attribute("training", c10::BoolType::get(), false);
  m.define(source);
  return m;
}

}  // namespace

TEST(LintRulesTest, ConvBiasBeforeBatchNormIsFoundOncePerConvolutionWithItsModulePath) {
  const auto found = with_rule(lint_module(build_builtin("convbn"), avx2()), "conv-bias-before-bn");
  ASSERT_EQ(found.size(), 3u);  // conv1..conv3, each followed by its batch norm
  EXPECT_EQ(found[0].module, "conv1");
  EXPECT_EQ(found[0].severity, Severity::kWarning);
  EXPECT_TRUE(found[0].fixable);
  EXPECT_NE(found[0].evidence.find("bn1"), std::string::npos) << found[0].evidence;
}

TEST(LintRulesTest, TorchvisionResNetHasNoConvBiasAndNamesItsFileForOtherFindings) {
  // torchvision builds its convolutions with bias=False: nothing to find there.
  auto m = torch::jit::load(fixture("resnet18_train_scripted.pt"));
  LintContext c = avx2();
  c.saved_training = true;
  const auto findings = lint_module(m, c);
  EXPECT_TRUE(with_rule(findings, "conv-bias-before-bn").empty());
  const auto training = with_rule(findings, "saved-in-training-mode");
  ASSERT_EQ(training.size(), 1u);
  EXPECT_NE(training[0].evidence.find("20 batch norm(s)"), std::string::npos) << training[0].evidence;
  EXPECT_NE(training[0].evidence.find("layer1.0.bn1"), std::string::npos) << training[0].evidence;
}

TEST(LintRulesTest, ChannelsAreCheckedAgainstTheVectorWidthOfThisCpu) {
  // The built-in convbn has 32 and 64 channels: multiples of 8 and of 16.
  EXPECT_TRUE(with_rule(lint_module(build_builtin("convbn"), avx2()), "size-multiple").empty());
  torch::jit::Module odd("__torch__.LintConv");
  odd.register_attribute("training", c10::BoolType::get(), false);
  odd.register_parameter("weight", at::ones({24, 3, 3, 3}), false);
  odd.define(R"(
def forward(self, x):
    return torch.relu(torch.conv2d(x, self.weight))
)");
  // 24 output channels: a multiple of 8, not of 16; the image's 3 channels are not the user's.
  EXPECT_TRUE(with_rule(lint_module(odd, avx2()), "size-multiple").empty());
  EXPECT_EQ(preferred_multiple(avx2()).multiple, 8);
  LintContext avx512 = avx2();
  avx512.cpu_isa.push_back("avx512f");
  EXPECT_EQ(preferred_multiple(avx512).multiple, 16);
  const auto found = with_rule(lint_module(odd, avx512), "size-multiple");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].evidence.find("24 output channels"), std::string::npos) << found[0].evidence;
  EXPECT_NE(found[0].evidence.find("AVX-512"), std::string::npos) << found[0].evidence;
  LintContext cuda;
  cuda.cuda = true;
  EXPECT_EQ(preferred_multiple(cuda).multiple, 8);
}

TEST(LintRulesTest, TorchvisionMobileNetFindingsNameTheModulePathAndTheModelsOwnLineOnce) {
  LintContext avx512 = avx2();
  avx512.cpu_isa.push_back("avx512f");
  const auto found =
      with_rule(lint_module(torch::jit::load(fixture("mobilenet_v2_scripted.pt")), avx512),
                "size-multiple");
  ASSERT_FALSE(found.empty());
  // 24 channels: MobileNetV2 rounds to multiples of 8, not 16.
  EXPECT_EQ(found[0].module, "features.2.conv.2");
  // The line in torchvision's mobilenetv2.py, from the debug records torch.jit.save keeps, not
  // the serialized code nor nn.Conv2d's own file.
  EXPECT_EQ(found[0].source.rfind("mobilenetv2.py:", 0), 0u) << found[0].source;
  std::set<std::string> places;
  for (const auto& f : found) EXPECT_TRUE(places.insert(f.module + f.evidence).second) << f.module;
  EXPECT_TRUE(with_rule(lint_module(torch::jit::load(fixture("mobilenet_v2_scripted.pt")), avx2()),
                        "size-multiple")
                  .empty());  // multiples of 8 everywhere
}

TEST(LintRulesTest, LinearFeaturesThatAreNotMultiplesAreInfoAndTheModelsOutputIsExempt) {
  auto m = scripted(R"(
def forward(self, x):
    h = torch.linear(x, torch.ones([30, 16]))
    return torch.linear(h, torch.ones([10, 30]))
)");
  // Constants made inside forward are not weights the rule can read: nothing found.
  EXPECT_TRUE(with_rule(lint_module(m, avx2()), "size-multiple").empty());
  torch::jit::Module w("__torch__.LintLinear");
  w.register_attribute("training", c10::BoolType::get(), false);
  w.register_parameter("w1", at::ones({30, 16}), false);
  w.register_parameter("w2", at::ones({10, 30}), false);
  w.define(R"(
def forward(self, x):
    h = torch.linear(x, self.w1)
    return torch.linear(h, self.w2)
)");
  const auto found = with_rule(lint_module(w, avx2()), "size-multiple");
  ASSERT_EQ(found.size(), 2u);  // 30 out of the first layer; 30 in of the second. 10 classes: exempt.
  EXPECT_EQ(found[0].severity, Severity::kInfo);
  EXPECT_NE(found[0].evidence.find("30 output features"), std::string::npos) << found[0].evidence;
  EXPECT_NE(found[1].evidence.find("30 input features"), std::string::npos) << found[1].evidence;
}

TEST(LintRulesTest, AHiddenLinearSizeIsFixableByPaddingAndATiedOneIsNot) {
  const auto odd = with_rule(lint_module(torch::jit::load(fixture("odd_mlp.pt")), avx2()),
                             "size-multiple");
  ASSERT_FALSE(odd.empty());
  for (const auto& f : odd) {
    EXPECT_TRUE(f.fixable) << f.evidence;
    EXPECT_NE(f.fix.find("pad=8"), std::string::npos) << f.fix;
  }
  const auto tied = with_rule(lint_module(torch::jit::load(fixture("not_paddable.pt")), avx2()),
                              "size-multiple");
  ASSERT_FALSE(tied.empty());  // 30 and 20 are not multiples of 8; padding them would change it
  for (const auto& f : tied) EXPECT_FALSE(f.fixable) << f.evidence;
}

TEST(LintRulesTest, ReadingATensorOnTheHostIsASync) {
  // The training fixture reads bool(self.calls >= 3) in forward.
  const auto found =
      with_rule(lint_module(torch::jit::load(fixture("diverges.pt")), avx2()), "host-sync");
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found[0].op, "aten::Bool");
  EXPECT_EQ(found[0].severity, Severity::kWarning);
  auto item = scripted(R"(
def forward(self, x):
    return x * x.max().item()
)");
  EXPECT_EQ(with_rule(lint_module(item, avx2()), "host-sync").at(0).op, "aten::item");
}

TEST(LintRulesTest, TensorsMadeOnTheHostAndFixedDeviceCopiesAreFound) {
  auto m = scripted(R"(
def forward(self, x):
    scale = torch.tensor([2.0])
    follows = torch.zeros([1], device=x.device)
    return (x * scale + follows).cpu()
)");
  const auto findings = lint_module(m, avx2());
  const auto host = with_rule(findings, "host-tensor");
  ASSERT_EQ(host.size(), 1u);  // the one that follows x's device is fine
  EXPECT_EQ(host[0].severity, Severity::kInfo);  // on the CPU: an allocation per call
  EXPECT_EQ(with_rule(findings, "device-copy").size(), 1u);
  LintContext cuda = avx2();
  cuda.cuda = true;
  EXPECT_EQ(with_rule(lint_module(m, cuda), "host-tensor").at(0).severity, Severity::kWarning);
}

TEST(LintRulesTest, PrintInForwardIsADebuggingLeftover) {
  auto m = scripted(R"(
def forward(self, x):
    print(x.shape)
    return x + 1
)");
  EXPECT_EQ(with_rule(lint_module(m, avx2()), "debug-print").size(), 1u);
}

TEST(LintRulesTest, AModelSavedInEvalModeHasNoTrainingModeFinding) {
  auto m = torch::jit::load(fixture("resnet18_scripted.pt"));
  EXPECT_TRUE(with_rule(lint_module(m, avx2()), "saved-in-training-mode").empty());
}

TEST(LintRulesTest, DebuggingVariablesInTheEnvironmentAreFound) {
  ::setenv("CUDA_LAUNCH_BLOCKING", "1", 1);
  ::setenv("ONEDNN_VERBOSE", "1", 1);
  const auto found = lint_process();
  ::unsetenv("CUDA_LAUNCH_BLOCKING");
  ::unsetenv("ONEDNN_VERBOSE");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_NE(found[0].evidence.find("CUDA_LAUNCH_BLOCKING=1"), std::string::npos);
  EXPECT_TRUE(lint_process().empty());
}

TEST(LintRulesTest, AModuleWithoutForwardIsAModelError) {
  torch::jit::Module m("__torch__.NoForward");
  EXPECT_THROW(lint_module(m, avx2()), ModelError);
}

}  // namespace torchperf

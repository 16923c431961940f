// `torchperf guard`: saved outputs judged against a saved reference by tune's own accuracy guard,
// as the Python API's apply asks it to.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "support/test_support.h"

namespace torchperf {
namespace {

using testing::CliRun;
using testing::run_cli;

class GuardCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("torchperf-guard-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The saved-outputs format: (List[Tensor], flops), as the reference and the Python side write.
  std::string save(const std::string& name, const std::vector<at::Tensor>& tensors) {
    c10::List<at::Tensor> list;
    for (const auto& t : tensors) list.push_back(t);
    const auto bytes = torch::pickle_save(c10::ivalue::Tuple::create({list, int64_t{0}}));
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(GuardCommandTest, OutputsEqualToTheReferencePassWithTheirMetrics) {
  const auto logits = torch::randn({16, 10}, torch::TensorOptions().dtype(torch::kFloat));
  const CliRun run =
      run_cli({"guard", save("ref.pt", {logits}), save("out.pt", {logits.clone()}), "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_TRUE(j.at("passes").get<bool>());
  EXPECT_DOUBLE_EQ(j.at("cosine").get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j.at("top1_agreement").get<double>(), 1.0);
  EXPECT_EQ(j.at("accuracy"), "cosine>=0.999,top1>=0.99,max_rel<=0.1");
}

TEST_F(GuardCommandTest, ASingleNumberScaledFourTimesFailsTheDefaultThoughItsCosineIsOne) {
  // Issue 63: the default guard was the cosine alone, which a scale does not change.
  const auto value = torch::full({1, 1}, 2.5);
  const CliRun run = run_cli({"guard", save("ref.pt", {value}), save("out.pt", {value * 4}),
                              "--json"});
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_FALSE(j.at("passes").get<bool>());
  EXPECT_DOUBLE_EQ(j.at("cosine").get<double>(), 1.0);
  EXPECT_NE(j.at("why").get<std::string>().find("max_rel 3 > 0.1"), std::string::npos) << run.out;
}

TEST_F(GuardCommandTest, AnotherModelsOutputsFailNamingTheBoundWithExitThree) {
  const auto logits = torch::randn({16, 10});
  const CliRun run = run_cli({"guard", save("ref.pt", {logits}), save("out.pt", {-logits})});
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_NE(run.out.find("FAILS: cosine -1.000000"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("< 0.999"), std::string::npos) << run.out;
}

TEST_F(GuardCommandTest, TheBoundsGivenWithAccuracyAreTheOnesApplied) {
  const auto x = torch::randn({16, 10});
  const std::string ref = save("ref.pt", {x}), out = save("out.pt", {x + 0.01});
  EXPECT_EQ(run_cli({"guard", ref, out}).exit_code, 0);  // cosine ~1: the default passes
  const CliRun strict = run_cli({"guard", ref, out, "--accuracy", "max_abs<=1e-3", "--json"});
  EXPECT_EQ(strict.exit_code, 3) << strict.err;
  EXPECT_NE(nlohmann::json::parse(strict.out).at("why").get<std::string>().find("max_abs"),
            std::string::npos)
      << strict.out;
}

TEST_F(GuardCommandTest, AFileThatIsNotSavedOutputsIsNamedInOneLine) {
  const std::string garbage = (dir_ / "garbage.pt").string();
  std::ofstream(garbage) << "not a pickle";
  const CliRun run = run_cli({"guard", save("ref.pt", {torch::ones({2})}), garbage});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("garbage.pt"), std::string::npos) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

TEST_F(GuardCommandTest, TheFileAtFaultIsNamedByItsRoleAndItsContentsWithoutLibTorchsInternals) {
  const std::string ref = save("ref.pt", {torch::ones({2})});
  const std::string garbage = (dir_ / "garbage.pt").string();
  std::ofstream(garbage) << "not a pickle";
  const CliRun bad_outputs = run_cli({"guard", ref, garbage});
  EXPECT_EQ(bad_outputs.exit_code, 4) << bad_outputs.err;
  EXPECT_NE(bad_outputs.err.find("outputs file '" + garbage + "'"), std::string::npos)
      << bad_outputs.err;
  EXPECT_EQ(bad_outputs.err.find("reference file"), std::string::npos) << bad_outputs.err;
  // A pickle of something else: a dict (not a tuple or a list), a list holding a number.
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  dict.insert("logits", torch::ones({2}));
  for (const c10::IValue& value :
       {c10::IValue(dict), c10::IValue(c10::List<int64_t>({1, 2})), c10::IValue(int64_t{3})}) {
    const auto bytes = torch::pickle_save(value);
    const std::string other = (dir_ / "other.pt").string();
    std::ofstream(other, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    const CliRun run = run_cli({"guard", other, ref});
    EXPECT_EQ(run.exit_code, 4) << run.err;
    EXPECT_NE(run.err.find("reference file '" + other + "'"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("expected saved outputs"), std::string::npos) << run.err;
    EXPECT_EQ(run.err.find("INTERNAL ASSERT"), std::string::npos) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
}

TEST_F(GuardCommandTest, OutputsThatCannotBeComparedFailSayingWhatDiffersWithNoFigures) {
  const std::string ref = save("ref.pt", {torch::ones({2, 10})});
  const CliRun shape = run_cli({"guard", ref, save("out.pt", {torch::ones({3, 10})})});
  EXPECT_EQ(shape.exit_code, 3) << shape.err;
  EXPECT_NE(shape.out.find("FAILS: the outputs cannot be compared with the reference: output 0 "
                           "has shape [3, 10], reference has [2, 10]"),
            std::string::npos)
      << shape.out;
  EXPECT_EQ(shape.out.find("cosine"), std::string::npos) << shape.out;
  const CliRun count = run_cli(
      {"guard", ref, save("two.pt", {torch::ones({2, 10}), torch::ones({2})}), "--json"});
  EXPECT_EQ(count.exit_code, 3) << count.err;
  const auto j = nlohmann::json::parse(count.out);
  EXPECT_FALSE(j.at("passes").get<bool>());
  EXPECT_FALSE(j.at("comparable").get<bool>());
  EXPECT_TRUE(j.at("cosine").is_null());
  EXPECT_TRUE(j.at("max_abs_error").is_null());
  EXPECT_NE(j.at("why").get<std::string>().find("output has 2 tensors, reference has 1"),
            std::string::npos)
      << count.out;
}

TEST_F(GuardCommandTest, ATupleOfTensorsIsEachAnOutputNeverAFlopCount) {
  const auto a = torch::randn({4, 10}), b = torch::randn({4, 3});
  const std::string ref = save("ref.pt", {a, b});
  const auto tuple_of = [&](const std::string& name, const at::Tensor& x, const at::Tensor& y) {
    const auto bytes = torch::pickle_save(c10::ivalue::Tuple::create({x, y}));
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  };
  EXPECT_EQ(run_cli({"guard", ref, tuple_of("same.pt", a, b)}).exit_code, 0);
  // The second output wrong: judged, not dropped as a FLOP count.
  const CliRun wrong = run_cli({"guard", ref, tuple_of("wrong.pt", a, -b), "--accuracy",
                                "max_abs<=1e-3"});
  EXPECT_EQ(wrong.exit_code, 3) << wrong.out << wrong.err;
}

TEST_F(GuardCommandTest, AGuardOfNoneAcceptsOutputsThatCannotBeCompared) {
  const CliRun run = run_cli({"guard", save("ref.pt", {torch::ones({2, 10})}),
                              save("out.pt", {torch::ones({3, 10})}), "--accuracy", "none"});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("passes (none): the outputs cannot be compared"), std::string::npos)
      << run.out;
}

}  // namespace
}  // namespace torchperf

#include "torchperf/lint/fix.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <algorithm>

#include "torchperf/models/builtin_models.h"
#include "torchperf/feed/inputs.h"
#include "support/test_support.h"

namespace torchperf {
namespace {

FixOptions quick(const std::string& model, const std::string& input_spec = "") {
  FixOptions o;
  o.bench.model = model;
  o.bench.input_spec = input_spec;
  o.bench.config = named_or_parsed("careful");
  o.bench.time_s = 0.3;
  o.bench.device = "cpu";
  return o;
}

bool has(const std::vector<std::pair<std::string, std::string>>& rewrites, const std::string& change) {
  return std::any_of(rewrites.begin(), rewrites.end(),
                     [&](const auto& r) { return r.first == change; });
}

}  // namespace

TEST(FixTest, TheRewritesOnOfferAreThoseThatApplyToTheModel) {
  const auto convbn = applicable_rewrites(quick("builtin:convbn").bench);
  EXPECT_TRUE(has(convbn, "conv_bias=fold"));
  EXPECT_TRUE(has(convbn, "precision=int8-dynamic"));  // its classifier is a Linear layer
  const auto mlp = applicable_rewrites(quick("builtin:mlp").bench);
  EXPECT_FALSE(has(mlp, "conv_bias=fold"));
  EXPECT_TRUE(has(mlp, "precision=int8-dynamic"));
  FixOptions given = quick("builtin:mlp");
  given.bench.config.set("precision", "bf16");  // the user chose a precision: int8 is not offered
  EXPECT_FALSE(has(applicable_rewrites(given.bench), "precision=int8-dynamic"));
}

TEST(FixTest, EveryMultipleTheHiddenSizesAreNotYetIsOfferedAsAPadding) {
  const auto odd = applicable_rewrites(quick(testing::fixture("odd_mlp.pt"), "784").bench);
  EXPECT_TRUE(has(odd, "pad=8"));
  EXPECT_TRUE(has(odd, "pad=16"));
  EXPECT_TRUE(has(odd, "pad=64"));
  const auto mlp = applicable_rewrites(quick("builtin:mlp").bench);  // 512: a multiple of all
  EXPECT_FALSE(has(mlp, "pad=8") || has(mlp, "pad=16") || has(mlp, "pad=64"));
  FixOptions given = quick(testing::fixture("odd_mlp.pt"), "784");
  given.bench.config.set("pad", "16");  // the user chose a padding: none is offered
  EXPECT_FALSE(has(applicable_rewrites(given.bench), "pad=8"));
}

TEST(FixTest, OfSeveralWinningValuesOfOneKnobOnlyTheFastestIsKept) {
  const auto outcome = [](std::string change, double speedup, bool kept) {
    RewriteOutcome o;
    o.change = std::move(change);
    o.speedup = speedup;
    o.kept = kept;
    return o;
  };
  std::vector<RewriteOutcome> outcomes = {
      outcome("pad=8", 1.10, true), outcome("pad=16", 1.25, true), outcome("pad=64", 1.40, false),
      outcome("conv_bias=fold", 1.05, true)};
  keep_fastest_value_per_knob(outcomes);
  EXPECT_FALSE(outcomes[0].kept);
  EXPECT_EQ(outcomes[0].reason, "pad=16 measured faster");
  EXPECT_TRUE(outcomes[1].kept);
  EXPECT_FALSE(outcomes[2].kept);  // faster, but it did not win head to head
  EXPECT_TRUE(outcomes[3].kept);   // another knob
}

TEST(FixTest, EachRewriteIsMeasuredHeadToHeadAndItsOutputChecked) {
  SteadyTimeSource clock;
  const auto outcomes = try_rewrites(quick("builtin:convbn"), clock);
  const auto fold = std::find_if(outcomes.begin(), outcomes.end(),
                                 [](const RewriteOutcome& o) { return o.change == "conv_bias=fold"; });
  ASSERT_NE(fold, outcomes.end());
  EXPECT_TRUE(fold->passes_guard) << fold->reason;  // folding keeps the output
  EXPECT_NE(fold->accuracy.find("cosine"), std::string::npos);
  EXPECT_GT(fold->speedup, 0);
  EXPECT_EQ(fold->kept, fold->interval.low > 1.0);
}

TEST(FixTest, ARewriteThatFailsTheGuardIsNotKeptAndSaysWhy) {
  FixOptions o = quick("builtin:mlp");
  o.guard = AccuracyGuard::parse("max_abs<=0");  // int8 cannot be exact
  SteadyTimeSource clock;
  const auto outcomes = try_rewrites(o, clock);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_FALSE(outcomes[0].passes_guard);
  EXPECT_FALSE(outcomes[0].kept);
  EXPECT_NE(outcomes[0].reason.find("accuracy guard"), std::string::npos) << outcomes[0].reason;
}

TEST(FixTest, TheWrittenModelCarriesTheKeptRewritesAndLoadsAgain) {
  RewriteOutcome fold;
  fold.change = "conv_bias=fold";
  fold.kept = true;
  RewriteOutcome int8;
  int8.change = "precision=int8-dynamic";
  int8.kept = false;  // measured and dropped: not written
  const std::string path = ::testing::TempDir() + "/convbn_fixed.pt";
  write_rewritten_model(quick("builtin:convbn").bench, {fold, int8}, path);
  auto back = torch::jit::load(path);
  auto original = build_builtin("convbn");
  const auto inputs = make_inputs(find_builtin("convbn").default_inputs, 2, 0);
  c10::InferenceMode inference;
  EXPECT_TRUE(at::allclose(back.forward(inputs).toTensor(), original.forward(inputs).toTensor(),
                           1e-4, 1e-5));
  auto graph = back.get_method("forward").graph();
  bool quantized = false;
  for (const auto* n : graph->nodes()) quantized |= n->kind().toQualString() == std::string("quantized::linear_dynamic");
  EXPECT_FALSE(quantized);
}

TEST(FixTest, AWrittenPaddingKeepsTheOutputAndPadsTheHiddenWeights) {
  RewriteOutcome pad;
  pad.change = "pad=16";
  pad.kept = true;
  FixOptions o = quick(testing::fixture("odd_mlp.pt"), "784");
  const std::string path = ::testing::TempDir() + "/odd_mlp_fixed.pt";
  write_rewritten_model(o.bench, {pad}, path);
  auto back = torch::jit::load(path);
  auto original = torch::jit::load(testing::fixture("odd_mlp.pt"));
  std::vector<std::int64_t> shape;
  for (const auto& p : back.named_parameters())
    if (p.name == "0.weight") shape = p.value.sizes().vec();
  EXPECT_EQ(shape, (std::vector<std::int64_t>{304, 784}));
  const std::vector<c10::IValue> inputs = {at::randn({3, 784})};
  c10::InferenceMode inference;
  EXPECT_TRUE(at::allclose(back.forward(inputs).toTensor(), original.forward(inputs).toTensor(),
                           1e-5, 1e-6));
}

}  // namespace torchperf

#include "torchperf/lint/fix.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <algorithm>

#include "torchperf/models/builtin_models.h"
#include "torchperf/models/inputs.h"

namespace torchperf {
namespace {

FixOptions quick(const std::string& model) {
  FixOptions o;
  o.bench.model = model;
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

}  // namespace torchperf

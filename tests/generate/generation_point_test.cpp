#include "torchperf/generate/generation_point.h"

#include <gtest/gtest.h>

#include "torchperf/error.h"

namespace torchperf {
namespace {

nlohmann::json logits(double cosine, double top1) {
  return {{"max_abs_error", 0.01}, {"max_rel_error", 0.002}, {"cosine", cosine},
          {"top1_agreement", top1}, {"nonfinite_values", 0}};
}

// Two calls of 2 rows and 5 new tokens: the first token 20 ms after the start, then 4 steps.
nlohmann::json answer() {
  const auto call = [](double step) {
    return nlohmann::json{{"ttft_s", 0.020}, {"decode_s", 4 * step},
                          {"steps_s", {step, step, step, step}}, {"end_to_end_s", 0.020 + 4 * step},
                          {"batch", 2}, {"new_tokens", 5}};
  };
  return {{"load_s", 1.5}, {"warmup_s", {9.0, 0.2}}, {"calls", {call(0.010), call(0.020)}},
          {"memory", {{"weights_bytes", 1000}, {"kv_cache_bytes", 200}, {"peak_bytes", 5000},
                      {"peak_counts", "rss"}}},
          {"step_bytes", {{"weights", 900.0}, {"kv_cache", 100.0}}},
          {"code", "model.generation_config.cache_implementation = 'static'\n"},
          {"guard", {{"token_agreement", 0.75}, {"agreed_steps", 3}, {"steps_compared", 8},
                     {"prefill", logits(0.99999, 1.0)}, {"decode_step", logits(0.9, 0.5)}}}};
}

TEST(GenerationPointTest, TheCallsTimestampsBecomeDecodeRateTtftTpotAndBandwidth) {
  const auto f = read_generation_answer(answer());
  // Decode: 2 rows x 4 tokens over 40 ms and over 80 ms: 200 and 100 tokens/s.
  EXPECT_DOUBLE_EQ(f.decode_tokens_per_s.max, 200);
  EXPECT_DOUBLE_EQ(f.decode_tokens_per_s.min, 100);
  EXPECT_DOUBLE_EQ(f.ttft_s.median, 0.020);
  EXPECT_DOUBLE_EQ(f.tpot_s.min, 0.010);
  EXPECT_EQ(f.itl_s.count, 8u);
  // End to end: 2 rows x 5 tokens over 60 ms.
  EXPECT_NEAR(f.end_to_end_tokens_per_s.max, 10 / 0.060, 1e-9);
  // 1000 bytes a step over the median TPOT (15 ms).
  EXPECT_NEAR(f.achieved_gb_per_s, 1000 / 0.015 / 1e9, 1e-15);
  EXPECT_EQ(f.warmup_s.size(), 2u);
  ASSERT_TRUE(f.guard);
  EXPECT_EQ(f.guard->agreed_steps, 3);
  EXPECT_THROW(read_generation_answer({{"calls", nlohmann::json::array()}}), RuntimeFailure);
}

TEST(GenerationPointTest, TheGuardsRuleJudgesThePrefillAndTheDecodeStepsLogits) {
  const auto f = read_generation_answer(answer());
  const auto failed = judge(*f.guard, AccuracyGuard::default_guard());
  ASSERT_TRUE(failed);
  EXPECT_NE(failed->find("the decode step's logits"), std::string::npos) << *failed;
  EXPECT_FALSE(judge(*f.guard, AccuracyGuard::parse("none")));
  auto nan = *f.guard;
  nan.prefill.nonfinite_values = 3;
  EXPECT_NE(judge(nan, AccuracyGuard::parse("none")).value_or("").find("3 NaN or Inf"),
            std::string::npos);
}

TEST(GenerationPointTest, APointTravelsThroughTheJournalUnchanged) {
  GenerationPoint p;
  p.settings = {{"engine", "pytorch"}, {"cache", "static"}};
  p.batch = 8;
  p.measured = true;
  p.figures = read_generation_answer(answer());
  p.guard_failure = "the decode step's logits: cosine";
  const auto back = generation_point_from_json(to_json(p));
  EXPECT_EQ(back.label(), p.label());
  EXPECT_DOUBLE_EQ(back.figures.decode_tokens_per_s.median, p.figures.decode_tokens_per_s.median);
  EXPECT_EQ(back.guard_failure, p.guard_failure);
  EXPECT_EQ(back.figures.code, "model.generation_config.cache_implementation = 'static'\n");
  EXPECT_FALSE(back.valid());
  GenerationPoint failed;
  failed.settings = p.settings;
  failed.error = "out of memory";
  failed.error_kind = "out-of-memory";
  EXPECT_EQ(generation_point_from_json(to_json(failed)).error_kind, "out-of-memory");
}

TEST(GenerationPointTest, ARequestCarriesTheCallsTheGuardAndTheSettings) {
  GenerationWorkload w;
  w.source = {LanguageModelSource::Kind::kPython, "lms:make"};
  w.prompt.min = w.prompt.max = 12;
  w.new_tokens = 6;
  const auto r = point_request(w, {{"cache", "static"}}, 3, "/tmp/ref.pt");
  EXPECT_EQ(r.at("configuration").at("cache"), "static");
  EXPECT_EQ(r.at("calls").size(), w.timed_calls);
  EXPECT_EQ(r.at("calls")[0].at("prompt_lengths"), (std::vector<int>{12, 12, 12}));
  EXPECT_EQ(r.at("guard").at("new_tokens"), 6);
  EXPECT_FALSE(point_request(w, {}, 1, "").contains("guard"));
}

}  // namespace
}  // namespace torchperf

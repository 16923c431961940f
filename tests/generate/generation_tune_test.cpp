#include "torchperf/generate/generation_tune.h"

#include <gtest/gtest.h>

#include "torchperf/error.h"

namespace torchperf {
namespace {

GenerationPoint point(double rate, double ttft, double tpot, const std::string& compile = "off") {
  GenerationPoint p;
  p.settings = {{"engine", "pytorch"}, {"compile", compile}};
  p.measured = true;
  p.figures.decode_tokens_per_s.median = rate;
  p.figures.ttft_s.median = p.figures.ttft_s.p99 = ttft;
  p.figures.tpot_s.median = p.figures.tpot_s.p99 = tpot;
  p.wall_s = 10;
  return p;
}

TEST(GenerationTuneTest, AnSloIsParsedFromDurationsOrAnMlperfPreset) {
  const auto slo = GenerationSlo::parse("ttft=500ms,tpot=30ms");
  EXPECT_DOUBLE_EQ(*slo.ttft_p99_s, 0.5);
  EXPECT_DOUBLE_EQ(*slo.tpot_p99_s, 0.03);
  EXPECT_DOUBLE_EQ(*GenerationSlo::parse("mlperf-llama3.1-8b").ttft_p99_s, 2.0);
  EXPECT_DOUBLE_EQ(*GenerationSlo::parse("mlperf-interactive").tpot_p99_s, 0.03);
  EXPECT_FALSE(GenerationSlo::parse("").any());
  EXPECT_THROW(GenerationSlo::parse("ttlt=1s"), UsageError);
  EXPECT_THROW(GenerationSlo::parse("ttft=soon"), UsageError);
}

TEST(GenerationTuneTest, TheWinnerIsTheFastestDecodeThatPassesTheGuardAndHoldsTheSlo) {
  std::vector<GenerationPoint> points = {point(100, 0.05, 0.010), point(300, 0.90, 0.004),
                                         point(500, 0.02, 0.002)};
  points[2].guard_failure = "changes the text";
  EXPECT_EQ(pick_winner(points, {}), 1u);
  EXPECT_EQ(pick_winner(points, GenerationSlo::parse("ttft=500ms")), 0u);
  EXPECT_FALSE(pick_winner(points, GenerationSlo::parse("ttft=10ms")));
  EXPECT_NE(GenerationSlo::parse("ttft=500ms").missed_by(points[1].figures).value_or("").find(
                "time to first token p99 900.0 ms > 500.0 ms"),
            std::string::npos);
}

TEST(GenerationTuneTest, ACompilesPriceIsWhatTheCompilesBeforeItPaid) {
  const GenerationSettings compiled = {{"engine", "pytorch"}, {"compile", "decode"}};
  const double prior = expected_price_s(compiled, {});
  EXPECT_GT(prior, expected_price_s({{"engine", "pytorch"}, {"compile", "off"}}, {}));
  auto paid = point(100, 0.05, 0.01, "decode");
  paid.figures.warmup_s = {30.5, 0.5};
  paid.figures.load_s = 2;
  const std::vector<GenerationPoint> done = {point(100, 0.05, 0.01), paid};
  // The plain point's wall (10 s) and the compile's 30 s + its 2 s of loading.
  EXPECT_DOUBLE_EQ(expected_price_s(compiled, done), 42);
}

}  // namespace
}  // namespace torchperf

namespace torchperf {
namespace {

TEST(GenerationTuneTest, ACombinationPromisesWhatItsOneKnobChangesGainedTogether) {
  const GenerationSettings base = {{"engine", "pytorch"}, {"precision", "fp32"}, {"cache", "dynamic"}};
  auto with = [&](const std::string& knob, const std::string& value, double rate, bool valid = true) {
    GenerationPoint p;
    p.settings = base;
    p.settings[knob] = value;
    p.batch = 1;
    p.measured = true;
    p.figures.decode_tokens_per_s.median = rate;
    if (!valid) p.guard_failure = "changes the text";
    return p;
  };
  GenerationPoint plain = with("engine", "pytorch", 100);
  const std::vector<GenerationPoint> done = {plain, with("precision", "bf16", 180),
                                             with("cache", "static", 50, false)};
  GenerationSettings both = base;
  both["precision"] = "bf16";
  both["engine"] = "openvino";  // not measured: no evidence either way
  EXPECT_DOUBLE_EQ(predicted_gain(both, 1, done, base), 1.8);
  GenerationSettings refused = base;
  refused["precision"] = "bf16";
  refused["cache"] = "static";  // changed the text alone in the same engine: the combination is last
  EXPECT_DOUBLE_EQ(predicted_gain(refused, 1, done, base), 0);
  EXPECT_DOUBLE_EQ(predicted_gain(both, 8, done, base), 1);  // nothing measured at batch 8
  // Another engine's own effect: OpenVINO measured, then its bf16 from there, not PyTorch's.
  auto ov = with("engine", "openvino", 300);
  auto ov_bf16 = ov;
  ov_bf16.settings["precision"] = "bf16";
  ov_bf16.figures.decode_tokens_per_s.median = 450;
  auto more = done;
  more.push_back(ov);
  more.push_back(ov_bf16);
  GenerationSettings ov_int8 = ov_bf16.settings;
  ov_int8["weights"] = "int8-weight-only";  // torchao's int8 refused says nothing of NNCF's
  auto torchao_int8 = with("weights", "int8-weight-only", 60, false);
  more.push_back(torchao_int8);
  EXPECT_DOUBLE_EQ(predicted_gain(ov_int8, 1, more, base), 4.5);
  // A precision's effect carries over: OpenVINO fp32 measured, bf16 not, PyTorch's bf16 gained 1.8.
  std::vector<GenerationPoint> ov_only = {plain, with("precision", "bf16", 180), ov};
  EXPECT_DOUBLE_EQ(predicted_gain(ov_bf16.settings, 1, ov_only, base), 3 * 1.8);
}

TEST(GenerationTuneTest, WeightsNeverMeasuredInAnEnginePromiseWhatTheirFewerBytesReadWould) {
  const GenerationSettings base = {{"engine", "pytorch"}, {"precision", "fp32"}, {"weights", "none"}};
  const auto point = [&](GenerationSettings s, double rate, double weight_bytes) {
    GenerationPoint p;
    p.settings = std::move(s);
    p.batch = 1;
    p.measured = true;
    p.figures.decode_tokens_per_s.median = rate;
    p.figures.step_weight_bytes = weight_bytes;
    p.figures.step_kv_bytes = 20e6;
    return p;
  };
  GenerationSettings ov = base, ov_bf16 = base;
  ov["engine"] = ov_bf16["engine"] = "openvino";
  ov_bf16["precision"] = "bf16";
  // OpenVINO bf16 reads 60 MB of weights and 20 MB of cache a step: int4 would read 15 MB of them.
  std::vector<GenerationPoint> done = {point(base, 100, 0), point(ov_bf16, 300, 60e6)};
  GenerationSettings int4 = ov_bf16;
  int4["weights"] = "int4-weight-only";
  EXPECT_DOUBLE_EQ(predicted_gain(int4, 1, done, base), 3 * 80.0 / 35.0);
  // The guard refused int4 there: int4 at fp32 in the same engine is refused before it runs.
  done.push_back(point(int4, 500, 15e6));
  done.back().guard_failure = "the prefill's logits: cosine 0.96 < 0.999";
  GenerationSettings int4_fp32 = int4;
  int4_fp32["precision"] = "fp32";
  EXPECT_DOUBLE_EQ(predicted_gain(int4_fp32, 1, done, base), 0);
  // int8 at fp32, one knob from two measured points: the more promising of the two predictions
  // (from OpenVINO fp32: 120 x 140/(20+30); from OpenVINO bf16 int8: its own 250, fp32's effect
  // unknown).
  GenerationSettings int8 = ov_bf16;
  int8["weights"] = "int8-weight-only";
  done.push_back(point(ov, 120, 120e6));
  done.push_back(point(int8, 250, 30e6));
  GenerationSettings int8_fp32 = int8;
  int8_fp32["precision"] = "fp32";
  EXPECT_DOUBLE_EQ(predicted_gain(int8_fp32, 1, done, base), 1.2 * 140.0 / 50.0);
}

}  // namespace
}  // namespace torchperf

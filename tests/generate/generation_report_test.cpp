#include "torchperf/generate/generation_report.h"

#include <gtest/gtest.h>

namespace torchperf {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GenerationReportTest, TheSnippetIsTransformersOwnLinesForEachKnob) {
  const auto code = generation_snippet({{"engine", "pytorch"}, {"precision", "bf16"},
                                        {"weights", "int8-weight-only"}, {"cache", "static"},
                                        {"compile", "decode"}, {"compile_mode", "default"},
                                        {"fullgraph", "on"}, {"threads", "2"}});
  EXPECT_TRUE(contains(code, "torch.set_num_threads(2)"));
  EXPECT_TRUE(contains(code, "model = model.to(torch.bfloat16)"));
  EXPECT_TRUE(contains(code, "quantize_(model, Int8WeightOnlyConfig())"));
  EXPECT_TRUE(contains(code, "cache_implementation = \"static\""));
  EXPECT_TRUE(contains(code, "CompileConfig(fullgraph=True)"));
  const auto forward = generation_snippet({{"compile", "forward"}, {"compile_mode", "max-autotune"}});
  EXPECT_TRUE(contains(forward, "model.forward = torch.compile(model.forward, mode=\"max-autotune\")"));
  const auto ov = generation_snippet({{"engine", "openvino"}, {"weights", "int8-weight-only"},
                                      {"precision", "bf16"}, {"threads", "2"}});
  EXPECT_TRUE(contains(ov, "OVModelForCausalLM.from_pretrained(path, export=True"));
  EXPECT_TRUE(contains(ov, "OVWeightQuantizationConfig(bits=8)"));
  EXPECT_TRUE(contains(ov, "\"INFERENCE_PRECISION_HINT\": \"bf16\""));
}

TEST(GenerationReportTest, TheTableMarksTheWinnerAndSaysItsGainOverHfGenerate) {
  GenerationTuneResult r;
  const auto make = [](GenerationSettings s, double rate) {
    GenerationPoint p;
    p.settings = std::move(s);
    p.batch = 1;
    p.measured = true;
    p.figures.decode_tokens_per_s.median = rate;
    p.figures.decode_tokens_per_s.median_ci = {rate * 0.9, rate * 1.1};
    p.figures.ttft_s.median = 0.03;
    p.figures.tpot_s.median = 1 / rate;
    return p;
  };
  r.points = {make({{"engine", "pytorch"}, {"precision", "fp32"}}, 50),
              make({{"engine", "pytorch"}, {"precision", "bf16"}}, 90)};
  GenerationPoint failed;
  failed.settings = {{"engine", "pytorch"}, {"compile", "forward"}};
  failed.error = "torch.compile failed";
  r.points.push_back(failed);
  r.baseline = 0;
  r.winner = 1;
  r.notes = {"left out precision=fp16: fp16 has fast kernels on CUDA only"};
  const auto text = format_generation_result(r);
  EXPECT_TRUE(contains(text, "precision=bf16 *")) << text;
  EXPECT_TRUE(contains(text, "HF generate, eager fp32")) << text;
  EXPECT_TRUE(contains(text, "(1.80x HF generate eager fp32 at batch 1)")) << text;
  EXPECT_TRUE(contains(text, "failed: torch.compile failed")) << text;
  EXPECT_TRUE(contains(text, "note: left out precision=fp16")) << text;
  const auto j = generation_result_json(r);
  EXPECT_EQ(j.at("winner"), 1);
  EXPECT_EQ(j.at("points").size(), 3u);
  EXPECT_TRUE(contains(j.at("snippet").get<std::string>(), "bfloat16"));
}

}  // namespace
}  // namespace torchperf

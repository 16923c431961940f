#include "torchperf/generate/generation_knobs.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "torchperf/error.h"

namespace torchperf {
namespace {

GenerationTraits cpu(bool bf16) {
  GenerationTraits t;
  t.bf16_native = bf16;
  t.usable_cores = 2;
  return t;
}

bool has(const GenerationSpace& space, const std::string& knob, const std::string& value) {
  return std::any_of(space.points.begin(), space.points.end(),
                     [&](const GenerationSettings& s) { return s.at(knob) == value; });
}

TEST(GenerationKnobsTest, TheSpaceStartsAtHfGeneratesDefaultsAndCompilesTheDecodeOnlyWithAStaticCache) {
  const auto space = generation_space(cpu(true), {});
  ASSERT_FALSE(space.points.empty());
  EXPECT_EQ(space.points.front(), baseline_settings(cpu(true)));
  EXPECT_EQ(settings_text(space.points.front()),
            "engine=pytorch;precision=fp32;weights=none;cache=dynamic;compile=off;"
            "compile_mode=default;fullgraph=off;attention=sdpa;threads=2");
  for (const auto& s : space.points) {
    if (s.at("compile") == "decode") {
      EXPECT_EQ(s.at("cache"), "static");
    }
    EXPECT_NE(s.at("weights"), "int4-weight-only");  // no CPU kernel
  }
  EXPECT_TRUE(has(space, "precision", "bf16"));
  EXPECT_TRUE(has(space, "compile", "forward"));
}

TEST(GenerationKnobsTest, Bf16IsLeftOutWhereTheCpuHasNoBf16AndSaysWhy) {
  const auto space = generation_space(cpu(false), {{"precision", {"fp32", "bf16"}}});
  EXPECT_FALSE(has(space, "precision", "bf16"));
  ASSERT_EQ(space.left_out.size(), 1u);
  EXPECT_NE(space.left_out[0].find("precision=bf16: this CPU has no bf16"), std::string::npos)
      << space.left_out[0];
}

TEST(GenerationKnobsTest, AnEngineNotInstalledIsOneNoteAndItsOwnKnobsStayPytorchs) {
  auto traits = cpu(true);
  auto space = generation_space(traits, {{"engine", {"pytorch", "openvino"}}});
  EXPECT_FALSE(has(space, "engine", "openvino"));
  ASSERT_EQ(space.left_out.size(), 1u);
  EXPECT_NE(space.left_out[0].find("optimum-intel is not installed"), std::string::npos);
  traits.engines = {"openvino"};
  space = generation_space(traits, {{"engine", {"pytorch", "openvino"}}});
  for (const auto& s : space.points)
    if (s.at("engine") == "openvino") {
      EXPECT_EQ(s.at("cache"), "dynamic");
      EXPECT_EQ(s.at("compile"), "off");
      EXPECT_NE(s.at("weights"), "int8-dynamic-activation");
    }
  EXPECT_TRUE(has(space, "engine", "openvino"));
  // int4 on this CPU is OpenVINO's (NNCF's int4 and its kernel), never torchao's.
  space = generation_space(traits, {});
  EXPECT_TRUE(has(space, "weights", "int4-weight-only"));
  for (const auto& s : space.points)
    if (s.at("weights") == "int4-weight-only") {
      EXPECT_EQ(s.at("engine"), "openvino");
    }
}

TEST(GenerationKnobsTest, UnknownKnobsAndValuesAreRefusedNamingWhatIsKnown) {
  EXPECT_THROW(parse_generation_space("cache=paged"), ConfigError);
  EXPECT_THROW(parse_generation_space("graph=eager"), ConfigError);
  EXPECT_THROW(parse_generation_space("threads=0"), ConfigError);
  EXPECT_THROW(parse_generation_space("cache"), ConfigError);
  EXPECT_THROW(parse_generation_space("cache=static;cache=dynamic"), ConfigError);
  const auto asked = parse_generation_space("cache=static;threads=1,2");
  EXPECT_EQ(asked.at("threads"), (std::vector<std::string>{"1", "2"}));
  const auto s = parse_settings("cache=static;compile=decode", cpu(true));
  EXPECT_EQ(s.at("cache"), "static");
  EXPECT_EQ(s.at("precision"), "fp32");
  try {
    parse_settings("graph=eager", cpu(true));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("engine, precision, weights"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace torchperf

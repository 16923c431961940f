#include "torchperf/feed/input_spec.h"

#include <gtest/gtest.h>

#include "torchperf/error.h"

namespace torchperf {

TEST(InputSpecTest, ParsesAnImageShapeAsFloat32) {
  const InputSpec s = parse_input_spec("3x224x224");
  ASSERT_EQ(s.tensors.size(), 1u);
  EXPECT_EQ(s.tensors[0].dtype, DType::kFloat32);
  EXPECT_EQ(s.tensors[0].shape, (std::vector<std::int64_t>{3, 224, 224}));
  EXPECT_FALSE(s.tensors[0].has_range);
}

TEST(InputSpecTest, ParsesSeveralTypedInputsWithRanges) {
  const InputSpec s = parse_input_spec("int64:128@0..30522; int64:128");
  ASSERT_EQ(s.tensors.size(), 2u);
  EXPECT_EQ(s.tensors[0].dtype, DType::kInt64);
  EXPECT_TRUE(s.tensors[0].has_range);
  EXPECT_DOUBLE_EQ(s.tensors[0].high, 30522);
  EXPECT_FALSE(s.tensors[1].has_range);
}

TEST(InputSpecTest, PrintsBackWhatItParsed) {
  for (const std::string text :
       {"3x224x224", "int64:128@0..30522;int64:128", "bfloat16:16x64", "uint8:3x32x32@0..256"})
    EXPECT_EQ(to_string(parse_input_spec(text)), text);
}

TEST(InputSpecTest, AcceptsCommonDtypeAliases) {
  EXPECT_EQ(parse_input_spec("fp16:8").tensors[0].dtype, DType::kFloat16);
  EXPECT_EQ(parse_input_spec("long:8").tensors[0].dtype, DType::kInt64);
}

TEST(InputSpecTest, RejectsMalformedSpecsWithTheOffendingPart) {
  const auto message = [](const std::string& text) {
    try {
      parse_input_spec(text);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("3x2.5x224").find("3x2.5x224"), std::string::npos);
  EXPECT_NE(message("3x_ax224").find("or a name like S"), std::string::npos);
  EXPECT_NE(message("0x3").find("positive"), std::string::npos);
  EXPECT_NE(message("3x99999999999999999999").find("dimension 99999999999999999999 is too large"),
            std::string::npos)
      << message("3x99999999999999999999");
  EXPECT_NE(message("int9:3").find("unknown dtype 'int9'"), std::string::npos);
  EXPECT_NE(message("int64:3@5..2").find("empty"), std::string::npos);
  EXPECT_NE(message("int64:3@5").find("LOW..HIGH"), std::string::npos);
  EXPECT_NE(message("").find("empty"), std::string::npos);
  EXPECT_NE(message("3;;4").find("empty"), std::string::npos);
  EXPECT_NE(message("int64:").find("expected dimensions"), std::string::npos);
  EXPECT_NE(message("uint8:4@0..300").find("whole numbers within [0, 256]"), std::string::npos);
  EXPECT_NE(message("bool:4@0..5").find("bool range"), std::string::npos);
  EXPECT_NE(message("int64:4@0.2..0.7").find("whole numbers"), std::string::npos);
  EXPECT_NE(message("@0..5").find("expected dimensions"), std::string::npos);
}

TEST(InputSpecTest, ANamedDimensionIsKeptByNameAndPrintedBack) {
  const InputSpec s = parse_input_spec("int64:S@0..30522;int64:S@1..2;4xT");
  EXPECT_EQ(s.named_dims(), (std::vector<std::string>{"S", "T"}));
  EXPECT_EQ(s.tensors[0].dim_names, (std::vector<std::string>{"S"}));
  EXPECT_EQ(s.tensors[2].dim_names, (std::vector<std::string>{"", "T"}));
  EXPECT_EQ(to_string(s), "int64:S@0..30522;int64:S@1..2;4xT");
}

TEST(InputSpecTest, SizesSetNamedDimensionsAndAMissingOneNamesTheDimOption) {
  const InputSpec s = parse_input_spec("int64:S@0..100;3xS");
  const InputSpec sized = with_sizes(s, {{"S", 7}});
  EXPECT_EQ(sized.tensors[1].shape, (std::vector<std::int64_t>{3, 7}));
  EXPECT_TRUE(sized.named_dims().empty());
  try {
    with_sizes(s, {});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("dimension S is named but has no distribution; expected --dim S="),
              std::string::npos)
        << e.what();
  }
}


TEST(InputSpecTest, AnEntryMayNameForwardsArgumentAndIsPrintedBackWithIt) {
  const InputSpec spec = parse_input_spec("attention_mask=int64:S@1..2;input_ids=int64:S@0..100");
  EXPECT_EQ(spec.tensors[0].argument, "attention_mask");
  EXPECT_TRUE(spec.names_arguments());
  EXPECT_FALSE(parse_input_spec("int64:S@0..100").names_arguments());
  EXPECT_EQ(to_string(spec), "attention_mask=int64:S@1..2;input_ids=int64:S@0..100");
  EXPECT_THROW(parse_input_spec("1mask=int64:8"), UsageError);
  EXPECT_THROW(parse_input_spec("mask="), UsageError);
}

TEST(InputSpecTest, NamedEntriesAreFedInForwardsOrder) {
  const std::vector<std::string> forward = {"input_ids", "attention_mask", "token_type_ids"};
  const InputSpec spec = parse_input_spec("attention_mask=int64:S@1..2;input_ids=int64:S@0..100");
  const InputSpec ordered = in_forward_order(spec, forward, 1, "m.pt");
  ASSERT_EQ(ordered.tensors.size(), 2u);
  EXPECT_EQ(ordered.tensors[0].argument, "input_ids");
  EXPECT_EQ(ordered.tensors[1].argument, "attention_mask");
  // Unnamed entries first, in order, then named ones.
  EXPECT_EQ(to_string(in_forward_order(parse_input_spec("int64:8@0..9;token_type_ids=int64:8@0..2;"
                                                        "attention_mask=int64:8@1..2"),
                                       forward, 1, "m.pt")),
            "int64:8@0..9;attention_mask=int64:8@1..2;token_type_ids=int64:8@0..2");
}

TEST(InputSpecTest, ANameForwardDoesNotTakeOrAGapBeforeAGivenArgumentIsAWorkloadErrorNamingIt) {
  const std::vector<std::string> forward = {"input_ids", "attention_mask", "token_type_ids"};
  const auto message = [&](const std::string& text, std::size_t required = 1) {
    try {
      in_forward_order(parse_input_spec(text), forward, required, "m.pt");
    } catch (const WorkloadError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("input_ids=8;mask=8").find("forward has no argument 'mask' in model 'm.pt' "
                                               "(forward takes input_ids, attention_mask, "
                                               "token_type_ids)"),
            std::string::npos);
  EXPECT_NE(message("input_ids=8;token_type_ids=8").find("argument 'attention_mask' is left out "
                                                         "before 'token_type_ids'"),
            std::string::npos);
  EXPECT_NE(message("input_ids=8;input_ids=8").find("'input_ids' is given twice"), std::string::npos);
  EXPECT_NE(message("input_ids=8;8").find("an input without a name after a named one"),
            std::string::npos);
  EXPECT_NE(message("input_ids=8", 2).find("'attention_mask' has no default and is not given"),
            std::string::npos);
}

}  // namespace torchperf

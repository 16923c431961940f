#include "torchperf/serve/model_runner.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "torchperf/measure/memory_probe.h"

namespace torchperf {
namespace {

ModelSignature two_inputs() {
  ModelSignature s;
  s.inputs = {{"image", WireType::kFp32, {-1, 2, 2}}, {"ids", WireType::kInt64, {-1, 3}}};
  s.outputs = {{"output0", WireType::kFp32, {-1, 5}}, {"output1", WireType::kInt64, {-1}}};
  return s;
}

WireTensor tensor(const std::string& name, WireType type, std::vector<std::int64_t> shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return {name, type, shape, std::vector<std::uint8_t>(n * element_size(type))};
}

TEST(ModelRunnerTest, InputsNamedAsTheSignatureArePutInItsOrder) {
  InferenceRequest r;
  r.inputs = {tensor("ids", WireType::kInt64, {2, 3}), tensor("image", WireType::kFp32, {2, 2, 2})};
  conform_request(two_inputs(), r);
  EXPECT_EQ(r.inputs[0].name, "image");
  EXPECT_EQ(r.inputs[1].name, "ids");
  EXPECT_EQ(request_batch(r), 2);
}

TEST(ModelRunnerTest, AnInputWithAnotherNameIsRefusedNamingTheExpectedOnes) {
  InferenceRequest r;
  r.inputs = {tensor("a", WireType::kFp32, {1, 2, 2}), tensor("b", WireType::kInt64, {1, 3})};
  try {
    conform_request(two_inputs(), r);
    ADD_FAILURE() << "a request with unknown input names was taken";
  } catch (const RequestError& e) {
    EXPECT_STREQ(e.what(), "input 'a' is not one of the model's inputs (expected image, ids)");
  }
}

TEST(ModelRunnerTest, NonFiniteInputsAreRefused) {
  InferenceRequest r;
  r.inputs = {tensor("image", WireType::kFp32, {1, 2, 2}), tensor("ids", WireType::kInt64, {1, 3})};
  const float inf = std::numeric_limits<float>::infinity();
  std::memcpy(r.inputs[0].bytes.data() + 4, &inf, sizeof inf);
  try {
    conform_request(two_inputs(), r);
    ADD_FAILURE() << "an Inf input was taken";
  } catch (const RequestError& e) {
    EXPECT_STREQ(e.what(), "input 'image': 1 NaN/Inf value; expected finite numbers");
  }
}

TEST(ModelRunnerTest, ACountDatatypeShapeOrBatchMismatchNamesTheInput) {
  const auto refused = [](InferenceRequest r) -> std::string {
    try {
      conform_request(two_inputs(), r);
    } catch (const RequestError& e) {
      return e.what();
    }
    return "accepted";
  };
  InferenceRequest one;
  one.inputs = {tensor("image", WireType::kFp32, {1, 2, 2})};
  EXPECT_EQ(refused(one), "the model takes 2 inputs, the request has 1");
  InferenceRequest type;
  type.inputs = {tensor("image", WireType::kFp64, {1, 2, 2}),
                 tensor("ids", WireType::kInt64, {1, 3})};
  EXPECT_EQ(refused(type), "input 'image' (image): expected datatype FP32, got FP64");
  InferenceRequest shape;
  shape.inputs = {tensor("image", WireType::kFp32, {1, 2, 3}),
                  tensor("ids", WireType::kInt64, {1, 3})};
  EXPECT_EQ(refused(shape), "input 'image' (image): expected shape [N,2,2], got [1,2,3]");
  InferenceRequest batch;
  batch.inputs = {tensor("image", WireType::kFp32, {2, 2, 2}),
                  tensor("ids", WireType::kInt64, {1, 3})};
  EXPECT_EQ(refused(batch), "input 'ids': batch 1 differs from the first input's 2");
  InferenceRequest empty;
  empty.inputs = {tensor("image", WireType::kFp32, {0, 2, 2}),
                  tensor("ids", WireType::kInt64, {0, 3})};
  EXPECT_EQ(refused(empty),
            "input 'image' (image): shape [0,2,2] holds no sample; expected [N,2,2] with N >= 1");
  InferenceRequest output;
  output.inputs = {tensor("image", WireType::kFp32, {1, 2, 2}),
                   tensor("ids", WireType::kInt64, {1, 3})};
  output.outputs = {"logits"};
  EXPECT_EQ(refused(output),
            "output 'logits' is not one of the model's outputs (output0, output1)");
}

TEST(ModelRunnerTest, ALengthBelowTheDimsMinOrAMaskOfAnotherLengthIsTheClientsErrorByName) {
  // Issue 63: these reached the model and came back as 500s with PyTorch's text.
  ModelSignature s;
  s.inputs = {{"input_ids", WireType::kInt64, {-1, -1}, {0, 64}, {0, 4}, {"", "S"}},
              {"attention_mask", WireType::kInt64, {-1, -1}, {0, 64}, {0, 4}, {"", "S"}}};
  s.outputs = {{"output0", WireType::kFp32, {-1, 8}}};
  const auto refused = [&](std::int64_t ids, std::int64_t mask) -> std::string {
    InferenceRequest r;
    r.inputs = {tensor("input_ids", WireType::kInt64, {1, ids}),
                tensor("attention_mask", WireType::kInt64, {1, mask})};
    try {
      conform_request(s, r);
    } catch (const RequestError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(refused(10, 10), "accepted");
  EXPECT_EQ(refused(0, 0),
            "input 'input_ids': size 0 in dimension 1 is below the shortest the model is served "
            "for, 4 (its --dim's MIN)");
  EXPECT_EQ(refused(10, 12),
            "input 'attention_mask': size 12 in dimension 1 differs from 10 in input 'input_ids'; "
            "both are S, expected one size");
}

TEST(ModelRunnerTest, ABatchOutsideTheModelsRangeIsRefusedSayingTheRange) {
  const auto refused = [](ModelSignature s, std::int64_t batch) -> std::string {
    InferenceRequest r;
    r.inputs = {tensor("image", WireType::kFp32, {batch, 2, 2}),
                tensor("ids", WireType::kInt64, {batch, 3})};
    try {
      conform_request(s, r);
      return "";
    } catch (const RequestError& e) {
      return e.what();
    }
  };
  ModelSignature fixed = two_inputs();
  fixed.batch_min = fixed.batch_max = 2;
  EXPECT_EQ(refused(fixed, 2), "");
  EXPECT_EQ(refused(fixed, 3),
            "batch 3: the model takes a batch of exactly 2 (a torch.export program exported with "
            "a static batch); send 2 samples per request");
  EXPECT_NE(refused(fixed, 1), "");
  ModelSignature ranged = two_inputs();
  ranged.batch_min = 2;
  ranged.batch_max = 4;
  EXPECT_EQ(refused(ranged, 4), "");
  EXPECT_EQ(refused(ranged, 5),
            "batch 5: the model takes batches from 2 to 4 (the range its torch.export program was "
            "exported with)");
  ModelSignature open = two_inputs();
  open.batch_min = 2;
  EXPECT_EQ(refused(open, 1000), "");
  EXPECT_NE(refused(open, 1).find("at least 2"), std::string::npos);
}

TEST(ModelRunnerTest, RequestsAreMergedIntoCallsThatStayWithinTheBatchRange) {
  ModelSignature s = two_inputs();
  s.batch_max = 4;
  std::vector<InferenceRequest> requests(5);
  const std::int64_t batches[] = {2, 2, 1, 4, 3};
  std::vector<const InferenceRequest*> batch;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    requests[i].inputs = {tensor("image", WireType::kFp32, {batches[i], 2, 2})};
    batch.push_back(&requests[i]);
  }
  const auto calls = split_by_batch_range(s, batch);
  ASSERT_EQ(calls.size(), 4u);  // 2+2 | 1 | 4 | 3
  EXPECT_EQ(calls[0].size(), 2u);
  EXPECT_EQ(calls[1].size(), 1u);
  EXPECT_EQ(calls[2][0], &requests[3]);
  EXPECT_EQ(calls[3][0], &requests[4]);
  s.batch_max = 0;  // no bound: one call
  EXPECT_EQ(split_by_batch_range(s, batch).size(), 1u);
}

TEST(ModelRunnerTest, OutputsAskedForAreSelectedInTheRequestsOrder) {
  InferenceRequest r;
  r.outputs = {"output1"};
  const auto chosen = select_outputs(
      r, {tensor("output0", WireType::kFp32, {1, 5}), tensor("output1", WireType::kInt64, {1})});
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_EQ(chosen[0].name, "output1");
  r.outputs.clear();
  EXPECT_EQ(select_outputs(r, {tensor("output0", WireType::kFp32, {1, 5})}).size(), 1u);
}

TEST(ModelRunnerTest, TheEchoRunnerAnswersEachRequestWithItsInputs) {
  EchoRunner echo({{"x", WireType::kFp32, {-1, 2}}});
  EXPECT_EQ(echo.signature().outputs[0].name, "output0");
  InferenceRequest a, b;
  a.inputs = {tensor("x", WireType::kFp32, {1, 2})};
  a.inputs[0].bytes[0] = 7;
  b.inputs = {tensor("x", WireType::kFp32, {3, 2})};
  const auto answers = echo.run({&a, &b});
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0][0].bytes[0], 7);
  EXPECT_EQ(answers[1][0].shape, (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(answers[1][0].name, "output0");
}

}  // namespace
}  // namespace torchperf

namespace torchperf {
namespace {

ModelSignature measured_call(double fixed, double per_token, bool with_length) {
  ModelSignature s;
  s.call_memory = {fixed, per_token, 256, -1, "calls of 2 and 4 rows at length 64"};
  if (with_length) s.lengths.input = 0;
  return s;
}

TEST(ModelRunnerTest, ACallMayHoldEightyPercentOfTheMemoryAvailableSharedAmongTheInstances) {
  const ModelSignature s = measured_call(4096, 1024, true);
  const auto one = available_call_memory(s, 1);
  const auto two = available_call_memory(s, 2);
  ASSERT_GT(one.call_bytes, 0);  // Linux says what is available
  EXPECT_LE(static_cast<double>(one.call_bytes),
            0.8 * static_cast<double>(memory_capacity_bytes()) + 1);
  EXPECT_NE(one.call_bytes_from.find("--max-call-memory auto: 80% of the "), std::string::npos)
      << one.call_bytes_from;
  EXPECT_NE(one.call_bytes_from.find(" of memory available at start"), std::string::npos)
      << one.call_bytes_from;
  EXPECT_NE(two.call_bytes_from.find(", over 2 instances"), std::string::npos);
  EXPECT_LT(two.call_bytes, one.call_bytes);
  // Nothing measured, nothing bounded.
  EXPECT_EQ(available_call_memory(ModelSignature{}, 1).call_bytes, 0);
}

TEST(ModelRunnerTest, TheStartUpLineSaysWhatACallTakesWhatItMayHoldAndWhatFits) {
  const ModelSignature s = measured_call(4096, 768, true);
  BatchingPolicy p;
  p.memory = {68 << 10, "--max-call-memory 68K", 4096, 768, 256};
  EXPECT_EQ(describe_call_memory(s, p),
            "call memory: 768 B a padded token in the call and 256 B in its request and answer, "
            "4.0 KiB a call (calls of 2 and 4 rows at length 64); a call may hold 68.0 KiB "
            "(--max-call-memory 68K): at most 64 padded tokens a call, a request past it alone "
            "gets 413");
  p.memory.call_bytes = 0;
  p.memory.call_bytes_from = "--max-call-memory auto: the memory available is not known";
  EXPECT_EQ(describe_call_memory(s, p),
            "call memory: 768 B a padded token in the call and 256 B in its request and answer, "
            "4.0 KiB a call (calls of 2 and 4 rows at length 64); no bound by memory "
            "(--max-call-memory auto: the memory available is not known)");
  ModelSignature failed;
  failed.call_memory.measured = "not measured: a call of 2 or 4 rows failed: out of memory";
  EXPECT_EQ(describe_call_memory(failed, p),
            "call memory not measured: a call of 2 or 4 rows failed: out of memory: no bound by "
            "memory");
  EXPECT_EQ(describe_call_memory(ModelSignature{}, p), "");
}

}  // namespace
}  // namespace torchperf

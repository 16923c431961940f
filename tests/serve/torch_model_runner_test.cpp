#include "torchperf/serve/torch_model_runner.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <cstring>
#include <random>

#include "support/test_support.h"
#include "torchperf/compat/allocation_peak.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

BenchOptions mlp(const std::string& config = "") {
  BenchOptions o;
  o.model = "builtin:mlp";
  if (!config.empty()) o.config = Configuration::parse(config);
  return o;
}

InferenceRequest request_of(const ModelSignature& s, std::int64_t batch, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  InferenceRequest r;
  for (const auto& spec : s.inputs) {
    WireTensor t{spec.name, spec.type, spec.shape, {}};
    t.shape[0] = batch;
    std::size_t n = 1;
    for (auto d : t.shape) n *= static_cast<std::size_t>(d);
    std::vector<float> values(n);
    for (auto& v : values) v = normal(rng);
    t.bytes.resize(n * sizeof(float));
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    r.inputs.push_back(std::move(t));
  }
  return r;
}

std::vector<float> floats(const WireTensor& t) {
  std::vector<float> v(t.bytes.size() / sizeof(float));
  std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

TEST(TorchModelRunnerTest, TheSignatureComesFromTheInputSpecAndOneCall) {
  auto instances = load_model_instances(mlp(), 1);
  const ModelSignature& s = instances[0]->signature();
  ASSERT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.inputs[0].type, WireType::kFp32);
  EXPECT_EQ(s.inputs[0].shape[0], -1);
  ASSERT_EQ(s.outputs.size(), 1u);
  EXPECT_EQ(s.outputs[0].name, "output0");
  EXPECT_EQ(s.outputs[0].shape[0], -1);
}

TEST(TorchModelRunnerTest, ABatchOfRequestsGivesEachTheOutputsItWouldGetAlone) {
  auto instances = load_model_instances(mlp("mode=eval,grad=no_grad"), 1);
  ModelRunner& m = *instances[0];
  m.enter_thread();
  const InferenceRequest a = request_of(m.signature(), 1, 1);
  const InferenceRequest b = request_of(m.signature(), 3, 2);
  const auto together = m.run({&a, &b});
  const auto alone_a = m.run({&a});
  const auto alone_b = m.run({&b});
  m.exit_thread();
  ASSERT_EQ(together.size(), 2u);
  EXPECT_EQ(together[1][0].shape[0], 3);
  const auto ta = floats(together[0][0]), la = floats(alone_a[0][0]);
  const auto tb = floats(together[1][0]), lb = floats(alone_b[0][0]);
  ASSERT_EQ(ta.size(), la.size());
  ASSERT_EQ(tb.size(), lb.size());
  for (std::size_t i = 0; i < ta.size(); ++i) EXPECT_NEAR(ta[i], la[i], 1e-4);
  for (std::size_t i = 0; i < tb.size(); ++i) EXPECT_NEAR(tb[i], lb[i], 1e-4);
}

TEST(TorchModelRunnerTest, AReducedPrecisionModelTakesAndGivesFp32) {
  auto instances = load_model_instances(mlp("mode=eval,grad=inference,precision=bf16"), 1);
  ModelRunner& m = *instances[0];
  EXPECT_EQ(m.signature().inputs[0].type, WireType::kFp32);
  EXPECT_EQ(m.signature().outputs[0].type, WireType::kFp32);
  const InferenceRequest a = request_of(m.signature(), 2, 3);
  const auto out = m.run({&a});
  for (float v : floats(out[0][0])) EXPECT_TRUE(std::isfinite(v));
}

TEST(TorchModelRunnerTest, AChannelsLastConvolutionalModelIsFedItsFormat) {
  BenchOptions o;
  o.model = "builtin:convbn";
  o.config = Configuration::parse("mode=eval,grad=no_grad,format=channels_last");
  auto instances = load_model_instances(o, 1);
  o.config = Configuration::parse("mode=eval,grad=no_grad");
  auto plain = load_model_instances(o, 1);
  const InferenceRequest a = request_of(instances[0]->signature(), 2, 4);
  const auto x = floats(instances[0]->run({&a})[0][0]);
  const auto y = floats(plain[0]->run({&a})[0][0]);
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-3);
}

TEST(TorchModelRunnerTest, EachInstanceIsItsOwnCopy) {
  auto instances = load_model_instances(mlp(), 2);
  ASSERT_EQ(instances.size(), 2u);
  EXPECT_NE(instances[0].get(), instances[1].get());
  EXPECT_THROW(load_model_instances(mlp(), 0), UsageError);
}

TEST(TorchModelRunnerTest, AnInputSpecTheModelRejectsFailsAtLoadNamingTheInputs) {
  BenchOptions o = mlp();
  o.input_spec = "7";
  try {
    load_model_instances(o, 1);
    FAIL() << "loaded";
  } catch (const WorkloadError& e) {
    EXPECT_NE(std::string(e.what()).find("rejected its inputs"), std::string::npos) << e.what();
  }
}

TEST(TorchModelRunnerTest, AStartSaysWhetherItsCompiledArtefactCameFromTheCacheOrWasCompiled) {
  EXPECT_EQ(describe_start(true, 41.2, ""), "warm: its AOTInductor package from the cache");
  EXPECT_EQ(describe_start(false, 41.23, ""),
            "cold: its AOTInductor package compiled in 41.2 s, cached for the next start");
  EXPECT_EQ(describe_start(false, 3, "the cached package p was unusable: truncated"),
            "cold: its AOTInductor package compiled in 3.0 s (the cached package p was unusable: "
            "truncated), cached for the next start");
}

TEST(TorchModelRunnerTest, TheWireFormOfASpecNamesItsInputsAndBatch) {
  const auto specs = wire_inputs(parse_input_spec("3x4;int64:7"));
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].shape, (std::vector<std::int64_t>{-1, 3, 4}));
  EXPECT_EQ(specs[1].type, WireType::kInt64);
  EXPECT_EQ(specs[1].name, "input1");
}

// Issue 62: requests of a varying length (--dim) merge into one call, padded, where padding was
// checked not to change an answer; each gets its own length back.
BenchOptions tokens(const std::string& model, const std::string& spec, const std::string& config) {
  BenchOptions o;
  o.model = model;
  o.input_spec = spec;
  o.dims = {"S=4..64"};
  o.config = Configuration::parse(config);
  return o;
}

InferenceRequest token_request(const ModelSignature& s, std::int64_t length, unsigned seed) {
  std::mt19937 rng(seed);
  InferenceRequest r;
  for (std::size_t i = 0; i < s.inputs.size(); ++i) {
    // Ids in 1..99 (both models' vocabularies hold them); a second input is the mask, all ones.
    std::vector<std::int64_t> values(static_cast<std::size_t>(length), 1);
    if (i == 0)
      for (auto& v : values) v = 1 + static_cast<std::int64_t>(rng() % 99);
    WireTensor t{s.inputs[i].name, WireType::kInt64, {1, length}, {}};
    t.bytes.resize(values.size() * sizeof(std::int64_t));
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    r.inputs.push_back(std::move(t));
  }
  return r;
}

TEST(TorchModelRunnerTest, RequestsOfOtherLengthsMergeIntoOnePaddedCallAndEachGetsItsOwnLength) {
  auto instances = load_model_instances(
      tokens("builtin:encoder", "int64:S@0..1000;int64:S@1..2", "mode=eval,grad=no_grad"), 1);
  ModelRunner& m = *instances[0];
  const auto& lengths = m.signature().lengths;
  EXPECT_TRUE(lengths.merge) << lengths.check;
  EXPECT_NE(lengths.check.find("padding checked at S"), std::string::npos) << lengths.check;
  EXPECT_EQ(lengths.input, 0);
  EXPECT_EQ(lengths.dim, 1);
  InferenceRequest a = token_request(m.signature(), 5, 1);
  InferenceRequest b = token_request(m.signature(), 17, 2);
  conform_request(m.signature(), a);
  conform_request(m.signature(), b);
  EXPECT_EQ(queued_size(m.signature(), b).length, 17);
  EXPECT_EQ(split_by_batch_range(m.signature(), {&a, &b}).size(), 1u);  // one call
  m.enter_thread();
  const auto together = m.run({&a, &b});
  const auto alone_a = m.run({&a});
  const auto alone_b = m.run({&b});
  m.exit_thread();
  ASSERT_EQ(together.size(), 2u);
  // The sequence output is cut back to each request's length; the pooled one has none.
  EXPECT_EQ(together[0][0].shape, (std::vector<std::int64_t>{1, 5, 64}));
  EXPECT_EQ(together[1][0].shape, (std::vector<std::int64_t>{1, 17, 64}));
  EXPECT_EQ(together[0][1].shape, (std::vector<std::int64_t>{1, 64}));
  for (std::size_t o = 0; o < 2; ++o) {
    const auto ta = floats(together[0][o]), la = floats(alone_a[0][o]);
    const auto tb = floats(together[1][o]), lb = floats(alone_b[0][o]);
    ASSERT_EQ(ta.size(), la.size());
    ASSERT_EQ(tb.size(), lb.size());
    for (std::size_t i = 0; i < ta.size(); ++i) EXPECT_NEAR(ta[i], la[i], 1e-3);
    for (std::size_t i = 0; i < tb.size(); ++i) EXPECT_NEAR(tb[i], lb[i], 1e-3);
  }
}

// Issue 63: what a call holds is measured at start-up, so that the queue bounds calls by what
// memory allows; the fit from two small calls foretells a larger one.
TEST(TorchModelRunnerTest, TheMemoryACallHoldsIsMeasuredAtStartUpAndForetellsALargerCall) {
  auto instances = load_model_instances(
      tokens("builtin:encoder", "int64:S@0..1000;int64:S@1..2", "mode=eval,grad=no_grad"), 1);
  ModelRunner& m = *instances[0];
  const auto& memory = m.signature().call_memory;
  EXPECT_EQ(memory.measured, "");  // the server asks for it: one instance, none under off
  m.measure_call_memory();
  EXPECT_EQ(memory.measured, "calls of 2 and 4 rows at length 64");
  EXPECT_EQ(memory.cuda_device, -1);
  ASSERT_GT(memory.bytes_per_token, 0);
  // Per token: two INT64 inputs' wire form, and 64 + 1 output values in their JSON form (the
  // sequence output's 64 a token, the pooled output's 64 a row of 64 tokens).
  EXPECT_DOUBLE_EQ(memory.answer_bytes_per_token, 2 * 8 + (64 + 1) * 48);
  std::vector<InferenceRequest> requests;
  for (unsigned i = 0; i < 8; ++i) requests.push_back(token_request(m.signature(), 64, i));
  std::vector<const InferenceRequest*> call;
  for (auto& r : requests) {
    conform_request(m.signature(), r);
    call.push_back(&r);
  }
  m.enter_thread();
  std::int64_t held = 0;
  {
    compat::AllocationPeak peak(compat::DeviceKind::kCpu);
    m.run(call);
    held = peak.peak_bytes();
  }
  m.exit_thread();
  const double foretold = memory.fixed_bytes + memory.bytes_per_token * 8 * 64;
  EXPECT_GT(static_cast<double>(held), 0.75 * foretold) << held << " bytes held";
  EXPECT_LT(static_cast<double>(held), 1.25 * foretold) << held << " bytes held";
  // A model without a length is measured per sample.
  auto plain = load_model_instances(mlp("mode=eval,grad=no_grad"), 1);
  plain[0]->measure_call_memory();
  EXPECT_EQ(plain[0]->signature().call_memory.measured, "calls of 2 and 4 rows");
  EXPECT_GT(plain[0]->signature().call_memory.bytes_per_token, 0);
}

TEST(TorchModelRunnerTest, ThePaddingKnobsBucketsAreTheQueuesAndItsRuleTheCallsLength) {
  auto instances = load_model_instances(
      tokens("builtin:encoder", "int64:S@0..1000;int64:S@1..2",
             "mode=eval,grad=no_grad,padding=buckets:16/64"),
      1);
  const auto& lengths = instances[0]->signature().lengths;
  EXPECT_EQ(lengths.edges, (std::vector<std::int64_t>{16, 64}));
  ASSERT_TRUE(lengths.padded);
  EXPECT_EQ(lengths.padded(17), 64);
  EXPECT_EQ(lengths.padded(9), 16);
}

TEST(TorchModelRunnerTest, PaddingIsCheckedAtEveryBucketEdgeFromTheShortestLengthItHolds) {
  auto instances = load_model_instances(
      tokens("builtin:encoder", "int64:S@0..1000;int64:S@1..2", "mode=eval,grad=no_grad"), 1);
  ModelRunner& m = *instances[0];
  // The last edge past the longest served (64): padded to 64, as the padding rule caps it.
  m.check_edges({16, 40, 512}, {{"S", 4}});
  const auto& lengths = m.signature().lengths;
  EXPECT_TRUE(lengths.merge) << lengths.check;
  EXPECT_NE(lengths.check.find("padding checked at every bucket edge (S 4 padded to 16, 17 padded "
                               "to 40, 41 padded to 64)"),
            std::string::npos)
      << lengths.check;
}

TEST(TorchModelRunnerTest, ASampleShorterThanTheShortestLengthIsNeverDrawnForAnEdge) {
  auto instances = load_model_instances(
      tokens("builtin:encoder", "int64:S@0..1000;int64:S@1..2", "mode=eval,grad=no_grad"), 1);
  // Below the shortest (12) the edge 8 holds no length: skipped; per-length edges pad nothing.
  instances[0]->check_edges({8, 64}, {{"S", 12}, {"T", 1}});
  EXPECT_NE(instances[0]->signature().lengths.check.find("every bucket edge (S 12 padded to 64)"),
            std::string::npos)
      << instances[0]->signature().lengths.check;
  const std::string before = instances[0]->signature().lengths.check;
  std::vector<std::int64_t> per_length(64);
  for (std::int64_t l = 1; l <= 64; ++l) per_length[static_cast<std::size_t>(l - 1)] = l;
  instances[0]->check_edges(per_length, {{"S", 4}});
  EXPECT_EQ(instances[0]->signature().lengths.check, before);
}

TEST(TorchModelRunnerTest, AnEdgeWherePaddingChangesTheAnswerIsNamedAndStopsMerging) {
  // Masked above 16 tokens, a plain mean at 16 or fewer (beside a constant: the cosine of one
  // number scaled is 1): the load's check (the typical length padded to 64) passes, the edge 16
  // (4 tokens padded to 16) does not.
  torch::jit::Module model("ShortUnmasked");
  model.define(R"(
def forward(self, ids, mask):
    x = ids.float() * mask.float()
    m = x.sum(1) / mask.sum(1).float()
    if ids.size(1) <= 16:
        m = x.mean(1)
    return torch.stack([m, torch.ones_like(m)], 1)
)");
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("short_unmasked_" + std::to_string(::getpid()) + ".pt"))
                               .string();
  model.save(path);
  auto instances = load_model_instances(
      tokens(path, "int64:S@1..100;int64:S@1..2", "grad=no_grad"), 1);
  std::filesystem::remove(path);
  ModelRunner& m = *instances[0];
  ASSERT_TRUE(m.signature().lengths.merge) << m.signature().lengths.check;
  m.check_edges({16, 64}, {{"S", 4}});
  EXPECT_FALSE(m.signature().lengths.merge);
  EXPECT_NE(m.signature().lengths.check.find("padding changes the answers at the bucket edge 16"),
            std::string::npos)
      << m.signature().lengths.check;
  EXPECT_NE(m.signature().lengths.check.find("S 4 padded to 16"), std::string::npos)
      << m.signature().lengths.check;
}

TEST(TorchModelRunnerTest, AModelWhoseAnswerPaddingChangesRunsEachLengthAsItsOwnCall) {
  // token_mean averages over every position, padding included: the check catches it.
  auto instances = load_model_instances(
      tokens(testing::fixture("token_mean.pt"), "int64:S@1..100", "mode=eval,grad=no_grad"), 1);
  ModelRunner& m = *instances[0];
  EXPECT_FALSE(m.signature().lengths.merge);
  EXPECT_NE(m.signature().lengths.check.find("padding changes the answers"), std::string::npos)
      << m.signature().lengths.check;
  InferenceRequest a = token_request(m.signature(), 5, 1);
  InferenceRequest b = token_request(m.signature(), 17, 2);
  EXPECT_EQ(split_by_batch_range(m.signature(), {&a, &b}).size(), 2u);
  m.enter_thread();
  const auto together = m.run({&a, &b});
  const auto alone_b = m.run({&b});
  m.exit_thread();
  ASSERT_EQ(together.size(), 2u);
  const auto tb = floats(together[1][0]), lb = floats(alone_b[0][0]);
  ASSERT_EQ(tb.size(), lb.size());
  for (std::size_t i = 0; i < tb.size(); ++i) EXPECT_NEAR(tb[i], lb[i], 1e-5);
}


// Issue 62, part 3: the shapes a plan names are run before serving; a call at one of them is on
// the plan, a call at another runs as it comes and is counted; the answers are the same.
TEST(TorchModelRunnerTest, APlansShapesArePreparedAndACallAtAnotherIsCountedOffThePlan) {
  auto instances = load_model_instances(
      tokens("builtin:encoder", "int64:S@0..1000;int64:S@1..2", "mode=eval,grad=no_grad"), 1);
  ModelRunner& m = *instances[0];
  EXPECT_FALSE(m.signature().graphs);  // no CUDA graphs on the CPU: calls keep their own shape
  BatchingPolicy policy;
  policy.max_batch = 2;
  const ShapePlan plan = plan_shapes(policy, {5, 5, 5, 17}, m.signature().batch_min,
                                     m.signature().batch_max, false, 100, 0);
  ASSERT_EQ(plan.shapes.size(), 4u);  // lengths 5 and 17, at 1 and 2 rows
  const PreparedShapes prepared = m.prepare_shapes(plan);
  EXPECT_EQ(prepared.shapes.size(), 4u);
  EXPECT_EQ(prepared.left_out, 0u);
  EXPECT_TRUE(prepared.stopped.empty()) << prepared.stopped;
  EXPECT_GT(prepared.seconds, 0);
  EXPECT_FALSE(prepared.pads);
  const std::string text = prepared.describe(plan);
  EXPECT_NE(text.find("prepared 4 call shapes"), std::string::npos) << text;
  EXPECT_NE(text.find("length 5 (75% of requests) at 1/2 rows"), std::string::npos) << text;

  InferenceRequest five = token_request(m.signature(), 5, 1);
  InferenceRequest nine = token_request(m.signature(), 9, 2);
  conform_request(m.signature(), five);
  conform_request(m.signature(), nine);
  m.enter_thread();
  EXPECT_EQ(m.off_plan_calls(), 0u);
  const auto on_plan = m.run({&five});
  EXPECT_EQ(m.off_plan_calls(), 0u);
  const auto off_plan = m.run({&nine});
  EXPECT_EQ(m.off_plan_calls(), 1u);
  m.run({&five, &five});  // 2 rows at length 5: planned
  EXPECT_EQ(m.off_plan_calls(), 1u);
  m.exit_thread();
  EXPECT_EQ(on_plan[0][0].shape, (std::vector<std::int64_t>{1, 5, 64}));
  EXPECT_EQ(off_plan[0][0].shape, (std::vector<std::int64_t>{1, 9, 64}));
}

// The path CUDA graphs take, on the CPU: a plan that pads runs a call at a prepared shape, its
// rows padded with zeros and its length up to its bucket's edge, and each answer is cut back to
// its request's own; the same as the request run alone.
TEST(TorchModelRunnerTest, APlanThatPadsRunsACallAtAPreparedShapeAndCutsEachAnswerBack) {
  auto instances = load_model_instances(
      tokens("builtin:encoder", "int64:S@0..1000;int64:S@1..2", "mode=eval,grad=no_grad"), 1);
  ModelRunner& m = *instances[0];
  ASSERT_TRUE(m.signature().lengths.merge) << m.signature().lengths.check;
  InferenceRequest five = token_request(m.signature(), 5, 1);
  InferenceRequest nine = token_request(m.signature(), 9, 2);
  InferenceRequest forty = token_request(m.signature(), 40, 3);
  for (auto* r : {&five, &nine, &forty}) conform_request(m.signature(), *r);
  m.enter_thread();
  const auto alone_five = m.run({&five});
  const auto alone_nine = m.run({&nine});
  m.exit_thread();
  BatchingPolicy policy;
  policy.max_batch = 4;
  policy.edges = {16, 64};
  // Lengths 5 and 9 fall in the bucket of 16, 40 in 64; rows 1, 2, 4.
  const ShapePlan plan = plan_shapes(policy, {5, 9, 40}, m.signature().batch_min,
                                     m.signature().batch_max, true, 100, 0);
  const PreparedShapes prepared = m.prepare_shapes(plan);
  ASSERT_TRUE(prepared.pads);
  EXPECT_EQ(prepared.shapes.size(), 6u) << prepared.describe(plan);
  EXPECT_TRUE(prepared.shapes.count({4, 16}));
  m.enter_thread();
  // 3 rows at length 9: padded to 4 rows at 16, a prepared shape.
  const auto together = m.run({&five, &nine, &nine});
  EXPECT_EQ(m.off_plan_calls(), 0u);
  m.run({&forty});
  EXPECT_EQ(m.off_plan_calls(), 0u);
  m.exit_thread();
  ASSERT_EQ(together.size(), 3u);
  EXPECT_EQ(together[0][0].shape, (std::vector<std::int64_t>{1, 5, 64}));
  EXPECT_EQ(together[1][0].shape, (std::vector<std::int64_t>{1, 9, 64}));
  EXPECT_EQ(together[2][0].shape, (std::vector<std::int64_t>{1, 9, 64}));
  for (std::size_t o = 0; o < 2; ++o) {
    const auto t5 = floats(together[0][o]), a5 = floats(alone_five[0][o]);
    const auto t9 = floats(together[2][o]), a9 = floats(alone_nine[0][o]);
    ASSERT_EQ(t5.size(), a5.size());
    ASSERT_EQ(t9.size(), a9.size());
    for (std::size_t i = 0; i < t5.size(); ++i) EXPECT_NEAR(t5[i], a5[i], 1e-3);
    for (std::size_t i = 0; i < t9.size(); ++i) EXPECT_NEAR(t9[i], a9[i], 1e-3);
  }
}

TEST(TorchModelRunnerTest, AMemoryBudgetLeavesShapesOutAndAPlanWithoutALengthPreparesItsRows) {
  auto instances = load_model_instances(mlp("mode=eval,grad=no_grad"), 1);
  ModelRunner& m = *instances[0];
  BatchingPolicy policy;
  policy.max_batch = 4;
  // No length: one call length for every request, at 1..4 rows.
  const ShapePlan plan = plan_shapes(policy, {}, m.signature().batch_min, m.signature().batch_max,
                                     false, 100, 0);
  ASSERT_EQ(plan.shapes.size(), 4u);
  const PreparedShapes all = m.prepare_shapes(plan);
  EXPECT_EQ(all.shapes.size(), 4u);
  EXPECT_NE(all.describe(plan).find("every call (100% of requests) at 1-4 rows"),
            std::string::npos)
      << all.describe(plan);
  // A budget of one byte: a shape is left out only once the prepared ones took memory.
  ShapePlan tight = plan;
  tight.budget_bytes = 1;
  const PreparedShapes some = m.prepare_shapes(tight);
  EXPECT_EQ(some.shapes.size() + some.left_out, 4u);
  if (some.left_out > 0) {
    EXPECT_GT(some.bytes, 1);
    EXPECT_NE(some.describe(tight).find("the memory budget (1 B an instance) left"),
              std::string::npos)
        << some.describe(tight);
  }
  // No time: preparing stops before the first shape, and says so.
  ShapePlan no_time = plan;
  no_time.budget_s = -1;
  const PreparedShapes none = m.prepare_shapes(no_time);
  EXPECT_TRUE(none.shapes.empty());
  EXPECT_NE(none.stopped.find("ran out with 4 shapes of the plan left"), std::string::npos)
      << none.stopped;
  EXPECT_NE(none.describe(no_time).find("counted off the plan"), std::string::npos);
}

}  // namespace
}  // namespace torchperf

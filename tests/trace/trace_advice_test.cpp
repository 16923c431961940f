#include "torchperf/trace/trace_advice.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "support/trace_text.h"
#include "test_paths.h"
#include "torchperf/trace/trace_analysis.h"
#include "torchperf/trace/trace_reader.h"

namespace torchperf {
namespace {

using testing::TraceText;

std::vector<Advice> advice_for(const TraceText& t) {
  return analyze_trace(read_trace_text(t.json(), "t.json")).advice;
}

const Advice* find(const std::vector<Advice>& advice, const std::string& rule) {
  const auto it =
      std::find_if(advice.begin(), advice.end(), [&](const Advice& a) { return a.rule == rule; });
  return it == advice.end() ? nullptr : &*it;
}

// A busy device for 100 µs: no rule about the device fires by itself.
TraceText busy_step() {
  TraceText t;
  t.device("NVIDIA A100-SXM4-40GB", 8).step(1, 0, 100);
  for (int i = 0; i < 10; ++i)
    t.runtime("cudaLaunchKernel", i * 2, 1, i + 1)
        .kernel("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_nn", i * 10, 10, i + 1);
  return t;
}

TEST(TraceAdvice, NamesReducedPrecisionAndSynchronisingCalls) {
  EXPECT_TRUE(reduced_precision_kernel("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_nn"));
  EXPECT_TRUE(reduced_precision_kernel("volta_h884gemm_64x64_nn"));
  EXPECT_TRUE(
      reduced_precision_kernel("void at::native::vectorized_elementwise_kernel<4, "
                               "at::native::BFloat16, float>"));
  EXPECT_FALSE(reduced_precision_kernel("volta_sgemm_128x64_nn"));
  EXPECT_FALSE(reduced_precision_kernel("cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4"));
  EXPECT_TRUE(synchronising_call("aten::item"));
  EXPECT_TRUE(synchronising_call("cudaStreamSynchronize"));
  EXPECT_TRUE(synchronising_call("hipDeviceSynchronize"));
  EXPECT_FALSE(synchronising_call("cudaLaunchKernel"));
}

TEST(TraceAdvice, ABusyDeviceInBf16GetsNoAdvice) { EXPECT_TRUE(advice_for(busy_step()).empty()); }

TEST(TraceAdvice, Fp32KernelsOnTensorCoresAskForAutocast) {
  TraceText t;
  t.device("NVIDIA A100-SXM4-40GB", 8)
      .step(1, 0, 100)
      .runtime("cudaLaunchKernel", 0, 1, 1)
      .kernel("volta_sgemm_128x64_nn", 1, 99, 1);
  const auto advice = advice_for(t);
  const Advice* a = find(advice, "reduced-precision");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->knob, "amp");
  EXPECT_TRUE(a->changes_training);
  EXPECT_NE(a->evidence.find("0.0% of kernel time is in fp16/bf16 kernels"), std::string::npos)
      << a->evidence;
  TraceText old;  // a Pascal GPU has no tensor cores: nothing to gain
  old.device("Tesla P100-PCIE-16GB", 6)
      .step(1, 0, 100)
      .runtime("cudaLaunchKernel", 0, 1, 1)
      .kernel("volta_sgemm_128x64_nn", 1, 99, 1);
  EXPECT_EQ(find(advice_for(old), "reduced-precision"), nullptr);
}

TEST(TraceAdvice, ADataLoaderShareAboveTrainsThresholdAsksForWorkers) {
  TraceText t = busy_step();
  t.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100, 20);
  t.step(2, 100, 20);
  const auto advice = advice_for(t);
  const Advice* a = find(advice, "data-wait");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->knob, "workers");
  EXPECT_NE(a->evidence.find("threshold 5.0%"), std::string::npos) << a->evidence;
}

TEST(TraceAdvice, PageableCopiesAskForPinnedMemory) {
  TraceText t = busy_step();
  t.runtime("cudaMemcpyAsync", 90, 1, 50)
      .memcpy("Memcpy HtoD (Pageable -> Device)", 100, 10, 50, 8 << 20);
  t.step(2, 100, 12);
  const auto advice = advice_for(t);
  const Advice* a = find(advice, "copy");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->knob, "pin_memory");
  EXPECT_NE(a->evidence.find("come from pageable memory"), std::string::npos) << a->evidence;
}

TEST(TraceAdvice, AnIdleDeviceWaitingForTheHostAsksForLessHostWorkPerKernel) {
  TraceText t;
  t.device().step(1, 0, 1000);
  for (int i = 0; i < 10; ++i)  // each kernel launched after the previous one ended
    t.runtime("cudaLaunchKernel", i * 100, 50, i + 1).kernel("gemm_bf16", i * 100 + 60, 5, i + 1);
  const auto advice = advice_for(t);
  const Advice* u = find(advice, "utilisation");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->knob, "batch");
  EXPECT_NE(u->evidence.find("host wait 100.0%"), std::string::npos) << u->evidence;
  const Advice* s = find(advice, "short-kernels");
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->evidence.find("100.0% of 10 kernels"), std::string::npos) << s->evidence;
  EXPECT_EQ(advice.front().rule, "utilisation");  // the largest share first
}

TEST(TraceAdvice, SynchronisingCallsInsideTheStepAreCountedOncePerItem) {
  TraceText t = busy_step();
  for (int i = 0; i < 3; ++i)
    t.op("aten::item", 20 + i * 20, 5).op("aten::_local_scalar_dense", 20 + i * 20, 5);
  t.runtime("cudaStreamSynchronize", 95, 4, 1000);
  const auto advice = advice_for(t);
  const Advice* a = find(advice, "sync");
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a->evidence.find("4.0 synchronising calls per step"), std::string::npos) << a->evidence;
  EXPECT_NE(a->evidence.find("aten::item x3"), std::string::npos) << a->evidence;
}

TEST(TraceAdvice, ExposedCommunicationAsksForOverlap) {
  TraceText t = busy_step();
  t.runtime("cudaLaunchKernel", 99, 1, 77)
      .kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", 100, 40, 77)
      .step(2, 100, 40);
  const auto advice = advice_for(t);
  const Advice* a = find(advice, "communication");
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a->evidence.find("0.0% of communication kernel time overlaps computation"),
            std::string::npos)
      << a->evidence;
}

TEST(TraceAdvice, TheA100TraceIsToldAboutSyncsTf32AndShortKernels) {
  const Trace trace = read_trace(std::string(TORCHPERF_TEST_SOURCE_DIR) +
                                 "/tests/data/traces/diff-control-a100.json.gz");
  const auto advice = analyze_trace(trace).advice;
  for (const char* rule : {"reduced-precision", "sync", "short-kernels", "communication"})
    EXPECT_NE(find(advice, rule), nullptr) << rule;
  EXPECT_TRUE(std::is_sorted(advice.begin(), advice.end(),
                             [](const Advice& a, const Advice& b) { return a.weight > b.weight; }));
}

TEST(TraceAdvice, AFullLaunchQueueSaysTheDeviceIsTheBottleneck) {
  // 1000 launches queued within 1 ms, and kernels of 100 us each: the queue reaches 1000.
  TraceText t;
  t.device("NVIDIA A100-SXM4-40GB", 8).step(1, 0, 1000);
  for (int i = 0; i < 1000; ++i)
    t.runtime("cudaLaunchKernel", i, 0.5, i + 1)
        .kernel("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_nn", 1000 + 100.0 * i, 100, i + 1);
  const auto advice = advice_for(t);
  const Advice* a = find(advice, "device-bound");
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a->evidence.find("launch queue reaches 1000 of 1024"), std::string::npos) << a->evidence;
  EXPECT_EQ(find(advice_for(busy_step()), "device-bound"), nullptr);
}

TEST(TraceAdvice, TheV100TraceIsDeviceBound) {
  const auto advice = analyze_trace(read_trace(std::string(TORCHPERF_TEST_SOURCE_DIR) +
                                               "/tests/data/traces/v100-ns-resolution-rank0.json.gz"))
                          .advice;
  const Advice* a = find(advice, "device-bound");
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a->evidence.find("1022 of 1024"), std::string::npos) << a->evidence;
}

}  // namespace
}  // namespace torchperf

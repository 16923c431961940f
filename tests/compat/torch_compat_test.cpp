#include "torchperf/compat/torch_compat.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace torchperf::compat {

TEST(TorchCompatTest, AutocastTurnsOnAndOffForCpu) {
  ASSERT_FALSE(autocast_enabled(DeviceKind::kCpu));
  set_autocast(DeviceKind::kCpu, true, "bfloat16");
  EXPECT_TRUE(autocast_enabled(DeviceKind::kCpu));
  const auto y = torch::mm(torch::randn({4, 4}), torch::randn({4, 4}));
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  set_autocast(DeviceKind::kCpu, false, "bfloat16");
  clear_autocast_cache();
  EXPECT_FALSE(autocast_enabled(DeviceKind::kCpu));
  EXPECT_EQ(torch::mm(torch::randn({4, 4}), torch::randn({4, 4})).scalar_type(), torch::kFloat);
}

TEST(TorchCompatTest, RejectsAnUnknownAutocastDtype) {
  EXPECT_THROW(set_autocast(DeviceKind::kCpu, true, "int8"), std::exception);
}

TEST(TorchCompatTest, FuserStateIsSavedAndRestoredWhole) {
  const FuserState before = fuser_state();
  set_fuser_state({true, true});
  EXPECT_TRUE(cpu_fusion_enabled());
  set_fuser_state({false, false});
  EXPECT_FALSE(cpu_fusion_enabled());
  EXPECT_FALSE(fuser_state().texpr_fuser);
  set_fuser_state(before);
  EXPECT_EQ(fuser_state().cpu_fusion, before.cpu_fusion);
  EXPECT_EQ(fuser_state().texpr_fuser, before.texpr_fuser);
}

TEST(TorchCompatTest, TheFuserProbeAnswersAndLeavesTheFuserAsItWas) {
  const FuserState before = fuser_state();
  const bool available = cpu_fuser_available();
  EXPECT_EQ(cpu_fuser_available(), available);  // cached
  EXPECT_EQ(fuser_state().cpu_fusion, before.cpu_fusion);
  EXPECT_EQ(fuser_state().texpr_fuser, before.texpr_fuser);
}

TEST(TorchCompatTest, ReportsTheAutocastDtype) {
  set_autocast(DeviceKind::kCpu, false, "bfloat16");
  EXPECT_EQ(autocast_dtype(DeviceKind::kCpu), "bfloat16");
  set_autocast(DeviceKind::kCpu, false, "float16");
  EXPECT_EQ(autocast_dtype(DeviceKind::kCpu), "float16");
  set_autocast(DeviceKind::kCpu, false, "bfloat16");
}

TEST(TorchCompatTest, TheLibraryLoadedIsTheOneTheHeadersDescribeAndAtLeast211) {
  // A mismatch means the binary found another LibTorch than it was built with (RPATH).
  EXPECT_EQ(torch_library_version(), torch_version());
  const int major = std::stoi(torch_version());
  const int minor = std::stoi(torch_version().substr(torch_version().find('.') + 1));
  EXPECT_TRUE(major > 2 || (major == 2 && minor >= 11)) << torch_version();
}

TEST(TorchCompatTest, ReportsVersionAndBuildConfiguration) {
  EXPECT_FALSE(torch_version().empty());
  EXPECT_NE(torch_build_config().find("PyTorch built with"), std::string::npos);
}

TEST(TorchCompatTest, SynchronizingTheCpuIsANoOp) {
  EXPECT_NO_THROW(synchronize(DeviceKind::kCpu));
}

TEST(TorchCompatTest, CpuBuildsHaveNoCudaAllocatorPeak) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(cuda_peak_allocated_bytes(0), -1);
  EXPECT_NO_THROW(reset_cuda_peak(0));
}

TEST(TorchCompatTest, CudaCountsAreConsistent) {
  if (cuda_available()) {
    EXPECT_GT(cuda_device_count(), 0);
  } else {
    EXPECT_EQ(cuda_device_count(), 0);
    EXPECT_EQ(cudnn_version(), 0);
  }
}

}  // namespace torchperf::compat

namespace torchperf::compat {

TEST(TorchCompatTest, DeviceMemoryFiguresAreMinusOneWithoutACudaDevice) {
  if (cuda_available()) {
    const std::int64_t total = cuda_memory_capacity_bytes(0);
    EXPECT_GT(total, 0);
    EXPECT_GT(cuda_available_bytes(0), 0);
    EXPECT_LE(cuda_available_bytes(0), total);
    return;
  }
  EXPECT_EQ(cuda_memory_capacity_bytes(0), -1);
  EXPECT_EQ(cuda_available_bytes(0), -1);
}

}  // namespace torchperf::compat

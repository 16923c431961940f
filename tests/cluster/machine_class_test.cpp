#include "torchperf/cluster/machine_class.h"

#include <gtest/gtest.h>

namespace torchperf {

namespace {

Environment xeon() {
  Environment e;
  e.cpu_model = "Intel(R) Xeon(R) Platinum 8480+";
  e.cpu_isa = {"avx2", "avx512f", "amx_tile"};
  e.logical_cores = 16;
  e.usable_cores = 16;
  e.torch_version = "2.11.0+cu130";
  e.hostname = "node-a";
  e.load_average_1m = 0.2;
  return e;
}

}  // namespace

TEST(MachineClassTest, TwoHostsOfOneModelAreOneClassWhateverTheirNamesAndLoad) {
  Environment other = xeon();
  other.hostname = "node-b";
  other.load_average_1m = 7.5;
  other.cpu_isa = {"amx_tile", "avx512f", "avx2"};  // the order /proc/cpuinfo lists them in
  EXPECT_EQ(machine_class_of(xeon()), machine_class_of(other));
  EXPECT_EQ(machine_class_difference(machine_class_of(xeon()), machine_class_of(other)), "");
}

TEST(MachineClassTest, CoresAGpuOrAnotherTorchMakeAnotherClassAndTheDifferenceIsNamed) {
  Environment fewer = xeon();
  fewer.usable_cores = 8;  // a taskset or a container's share
  const std::string ours = machine_class_of(xeon()), theirs = machine_class_of(fewer);
  EXPECT_NE(ours, theirs);
  EXPECT_EQ(machine_class_difference(ours, theirs), "'cores 16 of 16' against 'cores 8 of 16'");

  Environment gpu = xeon();
  gpu.cuda_devices = 1;
  gpu.gpu_names = {"NVIDIA H100 80GB HBM3"};
  gpu.gpu_driver = "580.95";
  EXPECT_NE(machine_class_of(gpu).find("gpu 1 x NVIDIA H100 80GB HBM3 (driver 580.95)"),
            std::string::npos)
      << machine_class_of(gpu);
  EXPECT_EQ(machine_class_difference(ours, machine_class_of(gpu)),
            "'gpu none' against 'gpu 1 x NVIDIA H100 80GB HBM3 (driver 580.95)'");

  Environment newer = xeon();
  newer.torch_version = "2.13.0";
  EXPECT_EQ(machine_class_difference(ours, machine_class_of(newer)),
            "'torch 2.11.0+cu130' against 'torch 2.13.0'");
}

}  // namespace torchperf

// The Ray link's own rules. A real cluster on loopback (tests/python/test_cluster.py) drives
// RayCluster and NodePool through `tune --cluster`: starting one is a Python job.
#include "torchperf/cluster/ray_cluster.h"

#include <gtest/gtest.h>

#include "torchperf/error.h"

namespace torchperf {

TEST(RayClusterTest, TheClusterIsNamedByTheFlagOrByRayAddress) {
  EXPECT_EQ(ray_address_of("ray", "10.0.0.1:6379"), "10.0.0.1:6379");
  EXPECT_EQ(ray_address_of("ray://head:10001", ""), "ray://head:10001");
  EXPECT_EQ(ray_address_of("ray://head:10001", "10.0.0.1:6379"), "ray://head:10001")
      << "the flag wins over the variable";
  EXPECT_EQ(ray_address_of("ray:127.0.0.1:6379", ""), "127.0.0.1:6379");
}

TEST(RayClusterTest, WithoutAnAddressTheErrorSaysHowToStartACluster) {
  try {
    ray_address_of("ray", "");
    FAIL();
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("set RAY_ADDRESS"), std::string::npos) << message;
    EXPECT_NE(message.find("ray start --head"), std::string::npos) << message;
    EXPECT_NE(message.find("torchperf_slot"), std::string::npos) << message;
  }
  for (const char* bad : {"slurm", "ray://", "ray:"}) {
    try {
      ray_address_of(bad, "");
      FAIL() << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("expected ray"), std::string::npos) << e.what();
    }
  }
}

TEST(RayClusterTest, ANodeIsLabelledByHostAddressAndTheStartOfItsId) {
  ClusterNode node;
  node.id = "83daf972537a84d3eb75c19f9eac75044bfad978b6d8dc4a326fd280";
  node.hostname = "gpu-07";
  node.address = "10.0.0.7";
  EXPECT_EQ(node.label(), "gpu-07 (10.0.0.7, node 83daf972)");
}

}  // namespace torchperf

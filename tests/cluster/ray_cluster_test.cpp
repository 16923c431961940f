// The Ray link's own rules. A real cluster on loopback (tests/python/test_cluster.py) drives
// RayCluster and NodePool through `tune --cluster`: starting one is a Python job.
#include "torchperf/cluster/ray_cluster.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

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

TEST(RayClusterTest, AnAddressThatIsNotHostAndPortIsRefusedAtOnceNamingWhatIsWrong) {
  // Ray itself takes half a minute to give up on these.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"ray://head", "no HOST:PORT"},
      {"ray://head:port", "the port 'port' is not a number from 1 to 65535"},
      {"ray://head:99999", "the port '99999' is not a number from 1 to 65535"},
      {"ray://head:0", "the port '0'"},
      {"ray://:10001", "no HOST:PORT"},
      {"ray://head/x:10001", "the host 'head/x' is not one"},
      {"ray:head:", "the port ''"}};
  for (const auto& [address, why] : bad) {
    try {
      ray_address_of(address, "");
      ADD_FAILURE() << address;
    } catch (const UsageError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind("--cluster '", 0), 0u) << message;
      EXPECT_NE(message.find(why), std::string::npos) << message;
      EXPECT_NE(message.find("expected ray://HOST:PORT"), std::string::npos) << message;
    }
  }
  EXPECT_THROW(ray_address_of("ray", "head:abc"), UsageError) << "RAY_ADDRESS is checked too";
  EXPECT_EQ(ray_address_of("ray", "auto"), "auto");
  EXPECT_EQ(ray_address_of("ray", "ray://[::1]:10001"), "ray://[::1]:10001");
}

TEST(RayClusterTest, ANodeIsLabelledByHostAddressAndTheStartOfItsId) {
  ClusterNode node;
  node.id = "83daf972537a84d3eb75c19f9eac75044bfad978b6d8dc4a326fd280";
  node.hostname = "gpu-07";
  node.address = "10.0.0.7";
  EXPECT_EQ(node.label(), "gpu-07 (10.0.0.7, node 83daf972)");
}

}  // namespace torchperf

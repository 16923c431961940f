#include "torchperf/cluster/ray_bridge_messages.h"

#include <gtest/gtest.h>

namespace torchperf {

TEST(RayBridgeMessagesTest, AnOperationIsItsOpAndItsFieldsAndReadsBack) {
  const nlohmann::json submit = to_op(RaySubmitOp{"job-3", "n1", {"torchperf", "__node-job"}, "{}"});
  EXPECT_EQ(submit.at("op"), "submit");
  EXPECT_EQ(submit.at("stdin"), "{}");
  EXPECT_EQ(submit.at("argv").size(), 2u);

  RayDone done;
  done.id = "job-3";
  done.ok = true;
  done.run.rc = 0;
  done.run.stdout_text = "{\"ending\": \"answered\"}\n";
  const RayDone back = from_op<RayDone>(to_op(done));
  EXPECT_EQ(back.id, "job-3");
  EXPECT_TRUE(back.ok);
  EXPECT_EQ(back.run.stdout_text, done.run.stdout_text);

  RayNodes nodes;
  nodes.nodes.emplace_back().id = "n1";
  nodes.nodes.back().slots = 1;
  EXPECT_EQ(from_op<RayNodes>(to_op(nodes)).nodes.at(0).id, "n1");
}

TEST(RayBridgeMessagesTest, AnAnswerWithoutAFieldOfItsOpIsRefusedNamingIt) {
  nlohmann::json done = to_op(RayDone{});
  done["run"].erase("stderr");
  try {
    from_op<RayDone>(done);
    ADD_FAILURE() << "a done without its run's stderr was read";
  } catch (const WorkerProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("no field 'stderr'"), std::string::npos) << e.what();
  }
}

TEST(RayBridgeMessagesTest, EveryOperationIsListedByDirection) {
  nlohmann::json schema;
  add_ray_bridge_schema(schema);
  const auto& bridge = schema.at("ray_bridge");
  for (const char* op : {"nodes", "submit", "cancel"}) EXPECT_TRUE(bridge["to_driver"].contains(op));
  for (const char* op : {"ready", "error", "nodes", "done", "cancelled"})
    EXPECT_TRUE(bridge["from_driver"].contains(op));
  EXPECT_EQ(bridge["from_driver"]["done"]["run"], "task-run");
}

}  // namespace torchperf

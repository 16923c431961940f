// The protocol's messages: their wire form, their field lists and the schema made from them.
#include "torchperf/worker/protocol.h"

#include <gtest/gtest.h>

namespace torchperf {
namespace {

BenchOptions tiny_mlp() {
  BenchOptions o;
  o.model = "builtin:mlp";
  o.time_s = 0.1;
  return o;
}

}  // namespace

TEST(WorkerProtocolTest, AMessageGoesOutAndComesBackWithItsVersionAndJob) {
  const auto request = to_request(SideRequest{tiny_mlp(), "threads=1"});
  EXPECT_EQ(request["protocol"], kWorkerProtocolVersion);
  EXPECT_EQ(request_job(request), "side");
  const auto back = from_request<SideRequest>(request);
  EXPECT_EQ(back.workload.model, "builtin:mlp");
  EXPECT_EQ(back.configuration, "threads=1");
  EXPECT_THROW(from_request<BlockRequest>(request), WorkerProtocolError);  // another job
  const auto reply = to_reply(BlockReply{1234.5});
  EXPECT_TRUE(reply["ok"].get<bool>());
  EXPECT_DOUBLE_EQ(from_reply<BlockReply>(reply, "a block").ns, 1234.5);
}

TEST(WorkerProtocolTest, AMistypedOrMissingFieldNamesTheFieldAndWhatItShouldBe) {
  auto mistyped = to_request(BlockRequest{3});
  mistyped["iterations"] = "three";
  try {
    from_request<BlockRequest>(mistyped);
    FAIL() << "a string taken for iterations";
  } catch (const WorkerProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("field 'iterations' is not of type integer"),
              std::string::npos)
        << e.what();
  }
  try {
    from_reply<FinishReply>(nlohmann::json{{"ok", true}}, "finish");
    FAIL() << "a reply without its measurement taken";
  } catch (const WorkerProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("has no field 'measurement'"), std::string::npos)
        << e.what();
  }
}

TEST(WorkerProtocolTest, TheSchemaListsEachJobsFieldsFromTheSameListsTheMessagesUse) {
  const auto schema = worker_protocol_schema();
  EXPECT_EQ(schema["protocol"], kWorkerProtocolVersion);
  EXPECT_EQ(schema["jobs"]["measure"]["request"],
            nlohmann::json({{"workload", "workload"}, {"configuration", "string"}}));
  EXPECT_EQ(schema["jobs"]["block"]["request"], nlohmann::json({{"iterations", "integer"}}));
  EXPECT_EQ(schema["jobs"]["block"]["reply"], nlohmann::json({{"ns", "number"}}));
  EXPECT_EQ(schema["jobs"]["side"]["ready"], nlohmann::json({{"configuration", "string"}}));
  // Every field a request carries is one the schema names, and the reverse.
  for (const auto& [job, entry] : schema["jobs"].items()) EXPECT_TRUE(entry.contains("request"));
  auto written = to_request(ReferenceRequest{tiny_mlp(), "4", "/tmp/r.pt"});
  written.erase("protocol");
  written.erase("job");
  for (const auto& [field, type] : schema["jobs"]["reference"]["request"].items())
    EXPECT_TRUE(written.contains(field)) << field;
  EXPECT_EQ(written.size(), schema["jobs"]["reference"]["request"].size());
}

TEST(WorkerProtocolTest, BenchOptionsAndTraitsSurviveTheWire) {
  BenchOptions o = tiny_mlp();
  o.input_spec = "784";
  o.seed = 9;
  o.reference_files = {{"1", "/tmp/ref.pt"}};
  o.python_module = "/tmp/module.pt";
  o.stream_timed_batches = 3;
  o.leader_samples_per_s = 12.5;
  o.check_padding = false;
  BenchOptions back;
  read_wire(wire_value(o), back);
  EXPECT_EQ(back.input_spec, "784");
  EXPECT_EQ(back.python_module, "/tmp/module.pt");
  EXPECT_EQ(back.seed, 9u);
  EXPECT_EQ(back.reference_files, o.reference_files);
  EXPECT_EQ(back.stream_timed_batches, 3u);
  EXPECT_EQ(back.leader_samples_per_s, 12.5);
  EXPECT_FALSE(back.check_padding);
  WorkloadTraits t;
  t.usable_cores = 7;
  t.saved_training = true;
  t.linear = true;
  t.conv_bias_before_bn = true;
  t.stream_batch_longest = {12, 40, 450};
  t.stream_longest = 450;
  EXPECT_EQ(to_json(workload_traits_from_json(to_json(t))), to_json(t));
  EXPECT_EQ(workload_traits_from_json(to_json(t)).stream_batch_longest, t.stream_batch_longest);
}

}  // namespace torchperf

#include "torchperf/sweep/record_fields.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "test_paths.h"

namespace torchperf {
namespace {

PointResult sample_point() {
  PointResult p;
  p.key = "threads=1,batch=8";
  p.status = PointStatus::kGuarded;
  p.reason = "accuracy guard: cosine 0.99 < 0.999";
  p.changes = 2;
  p.score = 412.5;
  p.wall_s = 3.25;
  p.stage = SearchStage::kFinal;
  p.time_s = 2;
  p.metrics.throughput = 412.5;
  p.metrics.throughput_low = 400;
  p.metrics.throughput_high = 420;
  p.metrics.latency_p50_low_ms = NAN;
  p.metrics.batch = 8;
  p.metrics.peak_memory_bytes = 123456789012;
  p.metrics.top1 = 0.75;
  return p;
}

std::string source_file(const std::string& relative) {
  std::ifstream in(std::string(TORCHPERF_TEST_SOURCE_DIR) + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(RecordFieldsTest, APointWrittenWithTheFieldListReadsBackTheSame) {
  const PointResult p = sample_point();
  const nlohmann::json j = write_fields(point_fields(), p);
  PointResult back;
  read_fields(point_fields(), j, back);
  EXPECT_EQ(write_fields(point_fields(), back), j);
  EXPECT_EQ(back.metrics.peak_memory_bytes, 123456789012);
  EXPECT_TRUE(std::isnan(back.metrics.latency_p50_low_ms));  // written as null
  EXPECT_EQ(j.at("metrics").at("throughput_ci"), nlohmann::json::array({400.0, 420.0}));
}

TEST(RecordFieldsTest, FieldsAJournalFromBeforeThemLacksReadAsTheirDefaults) {
  PointResult p;
  read_fields(point_fields(), {{"key", "k"}, {"status", "failed"}, {"metrics", nullptr}}, p);
  EXPECT_EQ(p.stage, SearchStage::kSweep);
  EXPECT_FALSE(p.brief);
  EXPECT_EQ(p.reason, "");
  PointMetrics m;
  EXPECT_THROW(read_fields(point_metrics_fields(), {{"batch", "eight"}}, m),
               std::invalid_argument);
}

TEST(RecordFieldsTest, APresentFieldOfTheWrongTypeIsRefusedNamingItNotReadAsItsDefault) {
  const auto refusal = [](const std::string& field, const nlohmann::json& value) -> std::string {
    nlohmann::json j = write_fields(point_fields(), sample_point());
    j[field] = value;
    PointResult p;
    try {
      read_fields(point_fields(), j, p);
      return "";
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
  };
  EXPECT_EQ(refusal("score", "fast"), "field 'score': expected number, got \"fast\"");
  EXPECT_EQ(refusal("reason", 7), "field 'reason': expected string, got 7");
  EXPECT_EQ(refusal("brief", "yes"), "field 'brief': expected boolean, got \"yes\"");
  EXPECT_EQ(refusal("metrics", "none"), "field 'metrics': expected object or null, got \"none\"");
  EXPECT_EQ(refusal("score", nullptr), "");  // NaN is written as null
}

TEST(RecordFieldsTest, CsvColumnsSplitAnIntervalAndCellsKeepIntegersExact) {
  EXPECT_EQ(csv_columns("throughput_ci", FieldType::kInterval),
            (std::vector<std::string>{"throughput_ci_low", "throughput_ci_high"}));
  EXPECT_EQ(csv_cells(nlohmann::json::array({1.5, nullptr}), FieldType::kInterval),
            (std::vector<std::string>{"1.5", ""}));
  EXPECT_EQ(csv_cells(123456789012, FieldType::kInteger), std::vector<std::string>{"123456789012"});
  EXPECT_EQ(csv_cells("a,\"b\"", FieldType::kString), std::vector<std::string>{"\"a,\"\"b\"\"\""});
}

TEST(RecordFieldsTest, TheDocsSchemaTablesAreTheFieldListsOwn) {
  const std::string docs = source_file("docs/results-schema.md");
  for (const std::string& table :
       {fields_markdown(point_fields()), fields_markdown(point_metrics_fields())})
    EXPECT_NE(docs.find(table), std::string::npos)
        << "docs/results-schema.md should hold, verbatim:\n" << table;
}

}  // namespace torchperf

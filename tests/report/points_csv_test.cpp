#include "torchperf/report/points_csv.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "support/known_runs.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

TEST(PointsCsvTest, OneRowPerPointWithAColumnPerKnobAndQuotedReasons) {
  const fs::path dir = fs::temp_directory_path() / ("torchperf-csv-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  testing::write_synthetic_run(dir.string(), testing::known_run());
  const std::string csv = points_csv({analyze(load_run(dir.string()))});
  fs::remove_all(dir);
  std::istringstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("run,model,key,threads,grad,precision,format,status,", 0), 0u) << header;
  std::size_t rows = 0;
  std::string line, failed;
  while (std::getline(in, line)) {
    ++rows;
    if (line.find(",failed,") != std::string::npos) failed = line;
  }
  EXPECT_EQ(rows, 16u);
  // The key holds commas: quoted; a failed point has no numbers.
  EXPECT_NE(failed.find("\"threads=2,grad=on,precision=fp32,format=channels_last\""),
            std::string::npos) << failed;
  EXPECT_NE(failed.find(",failed,worker died on signal SIGSEGV,crashed,1,0,"), std::string::npos)
      << failed;
  EXPECT_EQ(failed.substr(failed.size() - 4), ",,,,") << failed;
  // The columns are the journal's field names, an interval's ends suffixed.
  for (const char* column : {",throughput_samples_per_s,throughput_ci_low,throughput_ci_high,",
                             ",latency_p50_ci_ms_low,", ",peak_memory_bytes,", ",invalid_reason"})
    EXPECT_NE(header.find(column), std::string::npos) << column << " in " << header;
}

}  // namespace
}  // namespace torchperf

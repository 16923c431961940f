// The hidden modes a cluster's node runs (src/cluster): `__node-job` runs one job of a tune read
// as JSON on stdin and prints its outcome as one JSON line; `__node-probe PATH...` prints the
// node's environment and which of the paths it cannot read.
#include "node_commands.h"

#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "torchperf/cluster/node_job.h"
#include "torchperf/measure/clock.h"

namespace torchperf::cli {

int run_node_job_command() {
  const std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  NodeJob job;
  try {
    job = node_job_from_json(nlohmann::json::parse(text));
  } catch (const std::exception& e) {
    std::cerr << "torchperf __node-job: the job does not read: " << e.what() << "\n";
    return 2;
  }
  SteadyTimeSource clock;
  const WorkerOutcome outcome = run_node_job(job, clock);
  std::cout << to_json(outcome).dump() << std::endl;
  return 0;
}

int run_node_probe_command(int argc, char** argv) {
  std::cout << probe_node(std::vector<std::string>(argv + 2, argv + argc)).dump() << std::endl;
  return 0;
}

}  // namespace torchperf::cli

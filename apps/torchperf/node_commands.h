// The hidden modes a cluster's node runs for a tune on it (node_commands.cpp).
#pragma once

namespace torchperf::cli {

int run_node_job_command();
int run_node_probe_command(int argc, char** argv);

}  // namespace torchperf::cli

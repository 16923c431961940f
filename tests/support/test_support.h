// Shared test helpers: where the generated fixtures are, and running the real CLI binary.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "torchperf/models/workload_traits.h"

namespace torchperf::testing {

// Path of a fixture written by scripts/make_fixtures.py (ctest generates them first).
std::string fixture(const std::string& name);

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// The traits of a convolutional image model on this 2-core CPU without the TensorExpr fuser,
// for tests that resolve configurations without loading a model.
WorkloadTraits image_model_traits();
// The same model as a torch.export program only (a .pt2), and in both forms (a built-in).
WorkloadTraits image_program_traits();
WorkloadTraits image_builtin_traits();

// Runs the torchperf binary with these arguments (shell-quoted here), capturing both streams.
CliRun run_cli(const std::vector<std::string>& args);
// A bench run that measured: exit 0 (VALID), or exit 3 because its timing did not conclude on a
// busy machine (the stopping rule, the warm-up, a call over the budget), which the output says.
// Short runs in tests cannot promise the stopping rule; a broken run still fails this.
::testing::AssertionResult measured(const CliRun& run);

// Runs a POSIX shell script with $TORCHPERF set to the CLI binary (pipes, signals, background
// jobs): its exit code, stdout and stderr.
CliRun run_shell(const std::string& script);

// Opens an HTML file in Debian's chromium, headless, and returns the DOM after its scripts ran
// (a test failure, and "", without chromium). work_dir holds the browser profile and its log;
// with a screenshot path, a PNG of the page is written there too.
std::string browser_dom(const std::string& page, const std::string& work_dir,
                        const std::string& screenshot = "");

}  // namespace torchperf::testing

#include "support/test_support.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_paths.h"

namespace torchperf::testing {
namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

WorkloadTraits image_model_traits() {
  WorkloadTraits t;
  t.convolutional = true;
  t.image_input = true;
  t.floating_input = true;
  t.cpu_fuser = false;
  t.usable_cores = 2;
  return t;
}

WorkloadTraits image_program_traits() {
  WorkloadTraits t = image_model_traits();
  t.torchscript = false;
  t.exported_program = true;
  t.torchscript_form = false;
  t.program_form = true;
  t.can_train_mode = false;
  return t;
}

WorkloadTraits image_builtin_traits() {
  WorkloadTraits t = image_model_traits();
  t.program_form = true;
  t.program.min = 1;
  t.program.max = 4096;
  return t;
}

std::string fixture(const std::string& name) {
  const std::string path = std::string(TORCHPERF_TEST_FIXTURE_DIR) + "/" + name;
  if (!std::filesystem::exists(path))
    ADD_FAILURE() << "fixture " << path
                  << " is missing: run the tests with ctest, which generates them";
  return path;
}

namespace {

// Runs a shell command line with stdout and stderr captured.
CliRun run_command(const std::string& command) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("torchperf-cli-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "out").string(), err = (dir / "err").string();
  const int status = std::system(
      (command + " > " + quote(out) + " 2> " + quote(err) + " < /dev/null").c_str());
  CliRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = slurp(out);
  run.err = slurp(err);
  return run;
}

}  // namespace

::testing::AssertionResult measured(const CliRun& run) {
  if (run.exit_code == 0) return ::testing::AssertionSuccess();
  for (const char* reason : {"stopping rule not met", "warm-up did not settle", "one call takes"})
    if (run.exit_code == 3 && run.out.find(reason) != std::string::npos)
      return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "exit " << run.exit_code << "\n" << run.out << run.err;
}

CliRun run_cli(const std::vector<std::string>& args) {
  std::string command = quote(TORCHPERF_TEST_CLI);
  for (const auto& a : args) command += " " + quote(a);
  return run_command(command);
}

CliRun run_shell(const std::string& script) {
  return run_command("TORCHPERF=" + quote(TORCHPERF_TEST_CLI) + " sh -c " + quote(script));
}

std::string browser_dom(const std::string& page, const std::string& work_dir,
                        const std::string& screenshot) {
  namespace fs = std::filesystem;
  const char* browser = "/usr/bin/chromium";
  if (!fs::exists(browser)) {
    ADD_FAILURE() << "Debian's chromium is needed (scripts/install-deps.sh installs it)";
    return "";
  }
  const fs::path dir(work_dir);
  fs::create_directories(dir);
  const std::string flags =
      "--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run "
      "--disable-extensions --virtual-time-budget=30000 --window-size=1400,5200 "
      "--user-data-dir=" + (dir / "profile").string();
  const fs::path dom = dir / "dom.html";
  const fs::path log = dir / "chromium.log";
  const std::string url = "file://" + fs::absolute(page).string();
  const int status = std::system((std::string(browser) + " " + flags + " --dump-dom " + url +
                                  " > " + dom.string() + " 2> " + log.string())
                                     .c_str());
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(status, 0) << read(log);
  if (!screenshot.empty())
    std::system((std::string(browser) + " " + flags + " --screenshot=" + screenshot + " " + url +
                 " > /dev/null 2>&1")
                    .c_str());
  return read(dom);
}

}  // namespace torchperf::testing

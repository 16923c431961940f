// `torchperf serve` started by a test as a user starts it: a real process on loopback, its port
// read from its first line, stopped with a real signal.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_paths.h"

extern char** environ;

namespace torchperf::testing {

// `torchperf serve ARGS --port 0` in the background; the first line of its output says the port.
class ServeProcess {
 public:
  explicit ServeProcess(std::vector<std::string> args) {
    args.insert(args.begin(), {TORCHPERF_TEST_CLI, "serve"});
    args.insert(args.end(), {"--port", "0"});
    int out[2];
    EXPECT_EQ(::pipe(out), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    EXPECT_EQ(posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    out_ = fdopen(out[0], "r");
    first_line_ = line();
    std::smatch m;
    if (std::regex_search(first_line_, m, std::regex(R"(http://127\.0\.0\.1:(\d+))")))
      port_ = std::stoi(m[1]);
  }
  ~ServeProcess() {
    if (pid_ > 0) stop(SIGKILL);
    if (out_) fclose(out_);
  }
  // Sends the signal and returns the exit status (128 + signal when killed by it).
  int stop(int sig = SIGTERM) {
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string line() {
    char buffer[4096];
    return fgets(buffer, sizeof buffer, out_) ? std::string(buffer) : std::string();
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& first_line() const { return first_line_; }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  std::string first_line_;
  int port_ = 0;
};

}  // namespace torchperf::testing

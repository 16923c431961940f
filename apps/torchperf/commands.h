// The subcommands. Each registers its flags on the CLI11 app and returns a runner that produces
// the exit code; main() turns what a runner throws into its exit code and message.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace torchperf::cli {

using Runner = std::function<int()>;

Runner add_bench_command(CLI::App& app);
Runner add_tune_command(CLI::App& app);
Runner add_report_command(CLI::App& app);
Runner add_train_command(CLI::App& app);
Runner add_lint_command(CLI::App& app);
Runner add_knobs_command(CLI::App& app);
Runner add_env_command(CLI::App& app);
Runner add_export_command(CLI::App& app);
Runner add_guard_command(CLI::App& app);
Runner add_serve_command(CLI::App& app);
Runner add_load_command(CLI::App& app);
Runner add_serve_tune_command(CLI::App& app);
Runner add_trace_command(CLI::App& app);

}  // namespace torchperf::cli

// torchperf's command line: the only place that knows argv, the terminal and exit codes, and the
// only place that turns an error into an exit code and its message (the parts catch only where a
// failure becomes a value or gains context).
#include <c10/util/Exception.h>

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "commands.h"
#include "crash_report.h"
#include "exit_codes.h"
#include "node_commands.h"
#include "stop_signals.h"
#include "torchperf/cluster/node_job.h"
#include "torchperf/cluster/ray_bridge_messages.h"
#include "torchperf/compat/torch_error.h"
#include "torchperf/error.h"
#include "torchperf/feed/feed_json.h"
#include "torchperf/models/model.h"
#include "torchperf/process/scratch_dir.h"
#include "torchperf/train/training_side.h"
#include "torchperf/worker/protocol.h"
#include "torchperf/worker/worker.h"
#include "torchperf/worker/worker_process.h"

namespace {

int fail(int code, const std::string& message) {
  torchperf::keep_scratch_dir_if_named(message);  // a log in it the message names
  std::cerr << "torchperf: error: " << message << "\n";
  return code;
}

// libstdc++ says "filesystem error: cannot create directories: Permission denied [/x]": said
// here as "cannot create directories '/x': Permission denied".
std::string filesystem_error_text(const std::filesystem::filesystem_error& e) {
  std::string what = e.what();
  const std::string prefix = "filesystem error: ";
  if (what.rfind(prefix, 0) == 0) what.erase(0, prefix.size());
  const std::string operation = what.substr(0, what.find(':'));
  std::string paths;
  for (const auto* p : {&e.path1(), &e.path2()})
    if (!p->empty()) paths += (paths.empty() ? " '" : " and '") + p->string() + "'";
  return operation + paths + ": " + e.code().message();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace torchperf;
  cli::install_crash_report();
  // The hidden worker mode of tune: one job read from stdin, answered on fd 3 (errors included).
  if (argc == 2 && std::string(argv[1]) == "__worker")
    return run_worker(STDIN_FILENO, kWorkerResponseFd, nullptr,
                      {{TrainSideRequest::kJob, training_side_factory()}});
  // A tune's job on a cluster's node, and the probe of a node (src/cluster).
  if (argc == 2 && std::string(argv[1]) == "__node-job") return cli::run_node_job_command();
  if (argc >= 2 && std::string(argv[1]) == "__node-probe") return cli::run_node_probe_command(argc, argv);
  // Every wire's fields (the worker protocol's jobs, the node job, the Ray bridge's operations)
  // and the tables the Python side mirrors, which its tests check it follows.
  if (argc == 2 && std::string(argv[1]) == "__protocol") {
    nlohmann::json schema = worker_protocol_schema();
    add_training_side_schema(schema);
    add_node_job_schema(schema);
    add_ray_bridge_schema(schema);
    schema["feed"] = feed_schema();
    std::cout << schema.dump(2) << "\n";
    return 0;
  }
  // What a model is fed, typed (feed/feed_json.h): `__feed SPEC [NAME=DISTRIBUTION ...]`, for the
  // Python side's scripts that start from a spec (the grammar is parsed here only).
  if (argc >= 3 && std::string(argv[1]) == "__feed") {
    try {
      std::vector<NamedDim> given;
      for (int i = 3; i < argc; ++i) given.push_back(parse_dim_option(argv[i]));
      const InputSpec spec = parse_input_spec(argv[2]);
      std::cout << feed_json(spec, dims_for(spec.named_dims(), given)).dump() << "\n";
      return 0;
    } catch (const Error& e) {
      return fail(exit_code_of(e.kind()), e.what());
    } catch (const std::exception& e) {
      return fail(cli::kUsageError, std::string("__feed: ") + e.what());
    }
  }
  CLI::App app{
      "torchperf: finds the fastest way to run a PyTorch model on this machine, by measuring"};
  app.require_subcommand(1);
  app.set_version_flag("--version", TORCHPERF_VERSION);
  const std::vector<cli::Runner> runners = {
      cli::add_bench_command(app), cli::add_tune_command(app),       cli::add_report_command(app),
      cli::add_train_command(app), cli::add_lint_command(app),       cli::add_serve_command(app),
      cli::add_load_command(app),  cli::add_serve_tune_command(app), cli::add_trace_command(app),
      cli::add_knobs_command(app),
      cli::add_env_command(app),   cli::add_export_command(app), cli::add_guard_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(cli::kUsageError, e.what());
  }
  // The deprecation of TorchScript, once per command that reads a model file (not its workers).
  for (const CLI::App* sub : app.get_subcommands())
    for (const CLI::Option* opt : sub->get_options())
      if (opt->get_positional() && opt->get_name() == "model" && opt->count() > 0)
        if (const std::string notice = model_format_notice(opt->as<std::string>()); !notice.empty())
          std::cerr << "torchperf: note: " << notice << "\n";
  try {
    for (const auto& runner : runners) {
      const int code = runner();
      if (code >= 0) return code;
    }
    return fail(cli::kUsageError, "expected a subcommand");
  } catch (const Interrupted& e) {
    return fail(cli::stop_signal_exit_code(), e.what());
  } catch (const Error& e) {  // each kind its exit code, from the one table (error.h)
    return fail(exit_code_of(e.kind()), e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    return fail(cli::kRuntimeFailure, filesystem_error_text(e));
  } catch (const c10::Error& e) {
    return fail(cli::kRuntimeFailure, "LibTorch: " + compat::concise_error_message(e.what()));
  } catch (const std::exception& e) {  // TorchScript's JITException among them: keep one line
    return fail(cli::kRuntimeFailure, compat::concise_error_message(e.what()));
  }
}

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <iostream>

#include "commands.h"
#include "exit_codes.h"
#include "torchperf/bench/measurement_json.h"
#include "torchperf/compat/torch_error.h"
#include "torchperf/config/knob.h"
#include "torchperf/error.h"
#include "torchperf/models/builtin_models.h"
#include "torchperf/models/model.h"
#include "torchperf/models/python_side.h"
#include "torchperf/runtime/runtime.h"
#include "torchperf/report/table_writer.h"

namespace torchperf::cli {
namespace {

std::vector<std::string> used_by(const Knob& k) {
  std::vector<std::string> out;
  if (k.inference) out = {"bench", "tune"};
  if (k.training) out.push_back("train");
  return out;
}

// The engines the Python worker's Python has, as runtimes (their versions), and those it lacks.
nlohmann::json engines_json() {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& e : installed_engines())
    out[e.name] = {{"version", e.version}, {"cuda", e.cuda}};
  return out;
}

std::string engines_text() {
  std::string installed, missing;
  for (const Runtime* r : runtimes()) {
    if (r->family() != r->name()) continue;  // the engines: each a family of one runtime
    const auto& engines = installed_engines();
    const auto found = std::find_if(engines.begin(), engines.end(),
                                    [&](const InstalledEngine& e) { return e.name == r->name(); });
    std::string& list = found == engines.end() ? missing : installed;
    list += (list.empty() ? "" : ", ") + r->label();
    if (found != engines.end()) list += " " + found->version + (found->cuda ? " (CUDA)" : "");
  }
  // torchao is no engine: runtime=python's int8 precisions need it.
  const auto& engines = installed_engines();
  const auto torchao = std::find_if(engines.begin(), engines.end(),
                                    [](const InstalledEngine& e) { return e.name == "torchao"; });
  if (torchao == engines.end())
    missing += std::string(missing.empty() ? "" : ", ") + "torchao (int8-static and torchao's int8)";
  std::string text = installed.empty() ? "none" : installed;
  if (torchao != engines.end()) text += "; int8: torchao " + torchao->version;
  if (!missing.empty())
    text += "; not installed: " + missing + " (pip install 'torchperf[engines]')";
  return text;
}

}  // namespace

Runner add_knobs_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("knobs", "List the knobs and built-in models");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print as JSON (for scripts that iterate over knobs)");
  return [cmd, json]() -> int {
    if (!cmd->parsed()) return -1;
    if (*json) {
      nlohmann::json out = {{"knobs", nlohmann::json::array()},
                            {"builtin_models", nlohmann::json::array()}};
      for (const auto& k : knob_registry())
        out["knobs"].push_back(
            {{"name", k.name},
             {"description", k.description},
             {"integer_valued", k.integer_valued},
             {"values", k.integer_valued ? std::vector<std::string>{} : all_values(k)},
             {"scope", to_string(k.scope)},
             {"swept_by_default", k.swept_by_default(WorkloadTraits{})},  // for a TorchScript model
             {"commands", used_by(k)},
             {"changes_training", k.changes_training}});
      for (const auto& m : builtin_models())
        out["builtin_models"].push_back({{"name", m.name},
                                         {"description", m.description},
                                         {"inputs", to_string(m.default_inputs)}});
      out["engines"] = engines_json();
      std::cout << out.dump(2) << "\n";
      return kSuccess;
    }
    std::cout << "knobs (set with --NAME VALUE or --config NAME=VALUE,…)\n";
    for (const auto& k : knob_registry()) {
      std::string values;
      if (k.integer_valued)
        values = describe_integer(k);
      else
        for (const auto& v : all_values(k)) values += (values.empty() ? "" : " | ") + v;
      std::string commands;
      for (const auto& c : used_by(k)) commands += (commands.empty() ? "" : ", ") + c;
      std::cout << fmt::format("  {:<16} {}  [{}{}]\n  {:<16} {}\n", k.name, values, commands,
                               k.scope == KnobScope::kWorker ? "; a fresh worker process" : "", "",
                               k.description);
    }
    std::cout << "\nbuilt-in models (builtin:NAME)\n";
    for (const auto& m : builtin_models())
      std::cout << fmt::format("  {:<20} {}  [input {}]\n", m.name, m.description,
                               to_string(m.default_inputs));
    std::cout << "\nengines (runtime=NAME, a torch.export program converted)\n  " << engines_text()
              << "\n";
    return kSuccess;
  };
}

Runner add_env_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("env", "Show the environment measurements would be taken in");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print as JSON");
  return [cmd, json]() -> int {
    if (!cmd->parsed()) return -1;
    const Environment env = capture_environment();
    if (*json) {
      nlohmann::json out = to_json(env);
      out["engines"] = engines_json();
      std::cout << out.dump(2) << "\n";
    } else {
      for (const auto& w : env.warnings) std::cout << "***WARNING*** " << w << "\n";
      std::cout << format_environment(env);
      std::cout << fmt::format("  {:<22} {}\n", "engines", engines_text());
    }
    return kSuccess;
  };
}

Runner add_export_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "export", "Save a built-in model as a torch.export program (FILE.pt2) or a TorchScript file "
                "(any other name), for PyTorch in Python or any tool");
  auto model = std::make_shared<std::string>();
  auto path = std::make_shared<std::string>();
  cmd->add_option("model", *model, "builtin:NAME (see 'torchperf knobs')")->required();
  cmd->add_option("file", *path,
                  "Where to write it: a .pt2 name gets the program (batch dynamic), any other "
                  "TorchScript")
      ->required();
  auto force = std::make_shared<bool>(false);
  cmd->add_flag("--force", *force, "Overwrite FILE if it exists");
  return [cmd, model, path, force]() -> int {
    if (!cmd->parsed()) return -1;
    if (model->rfind("builtin:", 0) != 0)
      throw UsageError("export: expected builtin:NAME, got '" + *model + "'");
    std::error_code ec;
    // --force replaces a file, never a folder; and a folder that is not there is said as such,
    // before LibTorch's writer says it in its own words.
    if (std::filesystem::is_directory(*path, ec))
      throw UsageError("export: '" + *path + "' is a folder; expected a file name (e.g. '" +
                       (std::filesystem::path(*path) / "model.pt2").string() + "')");
    if (std::filesystem::exists(*path, ec) && !*force)
      throw UsageError("export: '" + *path + "' exists; pass --force to overwrite it");
    const auto parent = std::filesystem::path(*path).parent_path();
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
      throw UsageError("export: cannot write '" + *path + "': its folder '" + parent.string() +
                       "' does not exist");
    const bool program = std::filesystem::path(*path).extension() == ".pt2";
    const auto source = open_model(*model);
    try {
      if (program) {
        std::ifstream in(source->program_path(), std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
        if (!in && !in.eof())
          throw RuntimeFailure("cannot read the built-in's program '" + source->program_path() +
                               "'");
        write_file_whole(*path, bytes);
      } else {
        save_torchscript(source->load()->as_torchscript()->module(), *path);
      }
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw UsageError("export: cannot write '" + *path +
                       "': " + compat::concise_error_message(e.what()));
    }
    std::cout << "wrote " << *path << " (" << *model << (program ? ", a torch.export program" : "")
              << ", inputs "
              << to_string(find_builtin(model->substr(8)).default_inputs) << ")\n";
    return kSuccess;
  };
}

}  // namespace torchperf::cli

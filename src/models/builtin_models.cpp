#include "torchperf/models/builtin_models.h"

#include <c10/util/hash.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "torchperf/compat/torch_compat.h"
#include "torchperf/compat/torch_error.h"
#include "torchperf/error.h"
#include "torchperf/feed/feed_json.h"
#include "torchperf/models/aoti_package.h"
#include "torchperf/models/python_side.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

InputSpec encoder_inputs(std::int64_t sequence, std::int64_t vocab) {
  return parse_input_spec(fmt::format("int64:{n}@0..{v};int64:{n}@1..2", fmt::arg("n", sequence),
                                      fmt::arg("v", vocab)));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

const std::vector<BuiltinModelInfo>& builtin_models() {
  static const std::vector<BuiltinModelInfo> models = {
      {"mlp", "3-layer perceptron 784-512-512-10 (Linear+ReLU)", parse_input_spec("784")},
      {"resnet18", "ResNet-18, torchvision's architecture, random weights",
       parse_input_spec("3x224x224")},
      {"encoder", "BERT-style transformer encoder, tiny (2 layers, hidden 64, sequence 32; "
                   "positions up to 512)",
       encoder_inputs(32, 1000)},
      {"encoder:bert-base", "BERT-base-sized encoder (12 layers, hidden 768, sequence 128)",
       encoder_inputs(128, 30522)},
      {"convbn", "small convnet with conv bias before batch norm (a known anti-pattern)",
       parse_input_spec("3x64x64")},
  };
  return models;
}

const BuiltinModelInfo& find_builtin(const std::string& name) {
  std::string known;
  for (const auto& info : builtin_models()) {
    if (info.name == name) return info;
    known += (known.empty() ? "" : ", ") + std::string("builtin:") + info.name;
  }
  throw UsageError("unknown built-in model 'builtin:" + name + "'; expected one of " + known);
}

BuiltinFiles materialise_builtin(const std::string& name, std::uint64_t seed) {
  return materialise_builtin(name, seed, find_builtin(name).default_inputs, {});
}

BuiltinFiles materialise_builtin(const std::string& name, std::uint64_t seed, const InputSpec& spec,
                                 const std::vector<NamedDim>& dims) {
  find_builtin(name);  // an unknown name is refused before anything is written
  // Export needs each named dimension's range only: "S=4..512".
  std::vector<std::string> ranges;
  for (const auto& d : dims) ranges.push_back(range_option(d));
  std::string varying;  // "" for the built-in's own spec: its entry is the one it always had
  for (const auto& r : ranges) varying += " " + r;
  const std::string definition = python_package_dir() + "/torchperf/builtin_models.py";
  const std::string text = read_file(definition);
  if (text.empty())
    throw RuntimeFailure("built-in '" + name + "': its definition " + definition +
                         " is missing (set TORCHPERF_PYTHON_PATH to torchperf's python/ folder)");
  std::string entry_name = name;
  for (char& c : entry_name)
    if (c == ':' || c == '/') c = '-';
  const std::string key = c10::sha1(text + "|" + compat::torch_version() + "|" +
                                    std::to_string(seed) + "|" +
                                    std::to_string(kBuiltinMaxBatch) +
                                    (varying.empty() ? "" : "|" + to_string(spec) + varying))
                              .str()
                              .substr(0, 16);
  const fs::path entry = fs::path(torchperf_cache_dir()) / "builtins" / (entry_name + "-" + key);
  BuiltinFiles files{(entry / "model.pt2").string(), (entry / "model.pt").string()};
  if (fs::exists(files.program) && fs::exists(files.torchscript)) return files;
  std::error_code ec;
  fs::create_directories(entry, ec);
  if (ec)
    throw RuntimeFailure("cannot create the built-ins' cache folder '" + entry.string() +
                         "': " + ec.message() + " (set TORCHPERF_CACHE_DIR)");
  const CacheEntryLock lock((entry / "lock").string());
  if (fs::exists(files.program) && fs::exists(files.torchscript)) return files;  // made meanwhile
  PythonStep step;
  step.module = "torchperf.builtin_models";
  step.args = {name, entry.string(), "--feed", feed_json(spec, dims).dump(), "--seed",
               std::to_string(seed), "--max-batch", std::to_string(kBuiltinMaxBatch)};
  step.what = "exporting builtin:" + name + " from its Python definition";
  run_python_step(step);
  if (!fs::exists(files.program) || !fs::exists(files.torchscript))
    throw RuntimeFailure(step.what + ": the files it answered are not in " + entry.string());
  return files;
}

torch::jit::Module build_builtin(const std::string& name, std::uint64_t seed) {
  const BuiltinFiles files = materialise_builtin(name, seed);
  torch::jit::Module m;
  try {
    m = torch::jit::load(files.torchscript, torch::kCPU);
  } catch (const std::exception& e) {
    throw ModelError("builtin:" + name + ": its TorchScript form " + files.torchscript +
                     " does not load (" + compat::concise_error_message(e.what()) +
                     "); delete it to export it again");
  }
  // Built-ins stand for models exported for inference, so they load in eval mode; parameters
  // require grad, as every nn.Module's do: grad=on must really record autograd.
  m.eval();
  for (const auto& p : m.parameters()) p.requires_grad_(true);
  return m;
}

}  // namespace torchperf

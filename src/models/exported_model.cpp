#include "torchperf/models/exported_model.h"

#include <ATen/cpu/Utils.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "torchperf/compat/torch_error.h"
#include "torchperf/error.h"
#include "torchperf/models/python_side.h"
#include "torchperf/process/scratch_dir.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

std::string temp_file(const std::string& stem) {
  static std::atomic<int> counter{0};
  return scratch_path(stem + "-" + std::to_string(counter++) + ".pt");
}

void write_tensors(const std::string& path, const std::vector<c10::IValue>& values) {
  std::vector<c10::IValue> tensors;
  for (const auto& v : values) tensors.push_back(v.toTensor().detach().to(at::kCPU).contiguous());
  const std::vector<char> bytes = torch::jit::pickle_save(c10::ivalue::Tuple::create(tensors));
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw RuntimeFailure("cannot write the inputs file '" + path + "'");
}

struct RemoveOnExit {
  std::vector<std::string> paths;
  ~RemoveOnExit() {
    std::error_code ec;
    for (const auto& p : paths) fs::remove(p, ec);
  }
};

}  // namespace

ExportedProgramModel::ExportedProgramModel(std::string path, ProgramSignature signature)
    : path_(std::move(path)), signature_(std::move(signature)) {}

ExportedProgramModel::~ExportedProgramModel() = default;

std::vector<std::string> ExportedProgramModel::input_names() const {
  std::vector<std::string> names;
  for (const auto& in : signature_.inputs) names.push_back(in.name);
  return names;
}

void ExportedProgramModel::set_training(bool training) {
  if (training)
    throw ConfigError("model '" + path_ + "': a torch.export program is fixed in the mode it was "
                      "exported in (eval); it cannot be put in training mode");
}

void ExportedProgramModel::to(c10::Device device) {
  options_.device = device.is_cuda() ? "cuda" : "cpu";
  loader_.reset();
  compiled_.reset();
}

void ExportedProgramModel::to(c10::ScalarType dtype) {
  if (dtype != at::kFloat && dtype != at::kBFloat16)
    throw ConfigError("model '" + path_ + "': a torch.export program is compiled in fp32 or bf16, "
                      "not " + std::string(c10::toString(dtype)));
  options_.precision = dtype == at::kBFloat16 ? "bf16" : "fp32";
  loader_.reset();
  compiled_.reset();
}

void ExportedProgramModel::compile(bool max_autotune) {
  options_.max_autotune = max_autotune;
  const char* cap = std::getenv("ATEN_CPU_CAPABILITY");  // this process's cap (aten_isa)
  options_.aten_capability = cap ? cap : "";
  compiled_ = ensure_aoti_package(path_, options_, limits_);
  // A package compiled where the CPU has AMX (bf16, max-autotune) runs its tiles; Linux lets a
  // process use them only once it has asked (arch_prctl), which Python's torch does before its
  // kernels and LibTorch leaves to its caller: without it the first call died of SIGILL. A CPU
  // without AMX answers false, and nothing changes.
  at::cpu::init_amx();
  try {
    loader_ = std::make_unique<torch::inductor::AOTIModelPackageLoader>(compiled_->path);
  } catch (const std::exception& e) {
    throw CompileError("model '" + path_ + "': the AOTInductor package " + compiled_->path +
                       " did not load: " + compat::concise_error_message(e.what()));
  }
}

c10::IValue ExportedProgramModel::forward(const std::vector<c10::IValue>& inputs) {
  if (!loader_)
    throw RuntimeFailure("model '" + path_ + "': not compiled (graph=aoti compiles it)");
  std::vector<at::Tensor> tensors;
  tensors.reserve(inputs.size());
  for (const auto& v : inputs) tensors.push_back(v.toTensor());
  std::vector<at::Tensor> outputs = loader_->run(tensors);
  if (outputs.size() == 1) return outputs[0];
  return c10::ivalue::Tuple::create(std::vector<c10::IValue>(outputs.begin(), outputs.end()));
}

std::vector<at::Tensor> ExportedProgramModel::eager_outputs(const std::vector<c10::IValue>& inputs,
                                                           std::uint64_t* flops_per_call) const {
  RemoveOnExit files{{temp_file("inputs"), temp_file("reference")}};
  write_tensors(files.paths[0], inputs);
  PythonStep step;
  step.module = "torchperf.eager_reference";
  step.args = {path_, files.paths[0], files.paths[1]};
  if (flops_per_call) step.args.push_back("--flops");
  step.limits = limits_;
  step.what = "running '" + path_ + "' eagerly in PyTorch (the fp32 reference)";
  run_python_step(step);
  std::ifstream in(files.paths[1], std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<at::Tensor> outputs;
  try {
    const auto tuple = torch::jit::pickle_load(bytes).toTuple();
    for (const auto& t : tuple->elements().at(0).toListRef()) outputs.push_back(t.toTensor());
    if (flops_per_call)
      *flops_per_call = static_cast<std::uint64_t>(tuple->elements().at(1).toDouble());
  } catch (const std::exception& e) {
    throw RuntimeFailure(step.what + ": its answer could not be read (" +
                         compat::concise_error_message(e.what()) + ")");
  }
  return outputs;
}

}  // namespace torchperf

#include "torchperf/models/model.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "torchperf/compat/torch_compat.h"
#include "torchperf/compat/torch_error.h"
#include "torchperf/error.h"
#include "torchperf/models/builtin_models.h"
#include "torchperf/models/exported_model.h"
#include "torchperf/models/exported_program.h"

namespace torchperf {
namespace {

const char kBuiltinPrefix[] = "builtin:";

class TorchScriptFileSource final : public ModelSource {
 public:
  explicit TorchScriptFileSource(std::string path) : path_(std::move(path)) {}
  std::string name() const override { return path_; }
  std::unique_ptr<Model> load() const override;

 private:
  std::string path_;
};

// A torch.export program: its signature is read once, when it is opened (cheap: a JSON record).
class ExportedProgramSource final : public ModelSource {
 public:
  explicit ExportedProgramSource(std::string path)
      : path_(std::move(path)), signature_(read_program_signature(path_)) {}
  std::string name() const override { return path_; }
  std::unique_ptr<Model> load() const override {
    return std::make_unique<ExportedProgramModel>(path_, signature_);
  }
  // The program says what it is fed: the example's dtypes and shapes.
  std::optional<InputSpec> default_inputs() const override { return signature_.input_spec(); }
  std::string program_path() const override { return path_; }
  const ProgramSignature* program_signature() const override { return &signature_; }
  std::unique_ptr<Model> load_program() const override { return load(); }
  void vary(const InputSpec& spec, const std::vector<NamedDim>& dims) override {
    check_program_takes(signature_, spec, dims, path_);
  }

 private:
  std::string path_;
  ProgramSignature signature_;
};

// A built-in comes in both forms, materialised from its Python definition on first use.
class BuiltinSource final : public ModelSource {
 public:
  explicit BuiltinSource(const BuiltinModelInfo& info) : info_(info) {}
  std::string name() const override { return kBuiltinPrefix + info_.name; }
  std::unique_ptr<Model> load() const override {
    return std::make_unique<TorchScriptModel>(build_builtin(info_.name));
  }
  std::optional<InputSpec> default_inputs() const override { return info_.default_inputs; }
  std::string program_path() const override {
    return materialise_builtin(info_.name, 0, spec_ ? *spec_ : info_.default_inputs, dims_).program;
  }
  const ProgramSignature* program_signature() const override {
    if (!signature_) signature_ = read_program_signature(program_path());
    return &*signature_;
  }
  std::unique_ptr<Model> load_program() const override {
    return std::make_unique<ExportedProgramModel>(program_path(), *program_signature());
  }
  // Its program is exported again with them dynamic (a cache entry of its own).
  void vary(const InputSpec& spec, const std::vector<NamedDim>& dims) override {
    spec_ = spec;
    dims_ = dims;
    signature_.reset();
  }

 private:
  BuiltinModelInfo info_;
  std::optional<InputSpec> spec_;  // the spec the program is fed, when not the built-in's own
  std::vector<NamedDim> dims_;
  mutable std::optional<ProgramSignature> signature_;
};

bool starts_with_bytes(const std::string& path, const std::string& magic) {
  std::ifstream in(path, std::ios::binary);
  std::string head(magic.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  return in.gcount() == static_cast<std::streamsize>(magic.size()) && head == magic;
}

// A zip ends with an end-of-central-directory record; a truncated copy has lost it.
bool has_zip_end_record(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const std::streamoff size = in.tellg();
  const std::streamoff tail = std::min<std::streamoff>(size, 65536 + 22);
  std::string buffer(static_cast<std::size_t>(tail), '\0');
  in.seekg(size - tail);
  in.read(buffer.data(), tail);
  return buffer.find(std::string("PK\x05\x06", 4)) != std::string::npos;
}

// Whether a zip archive holds a record (PyTorch archives keep each record in one top folder).
bool has_record(caffe2::serialize::PyTorchStreamReader& reader, const std::string& name) {
  for (const auto& record : reader.getAllRecords())
    if (record == name) return true;
  return false;
}

// Explains why a file is not a TorchScript model, by what it is instead.
std::string diagnose_not_torchscript(const std::string& path, const std::string& torch_message) {
  if (!starts_with_bytes(path, "PK\x03\x04"))
    return "not a TorchScript archive (expected a zip file written by torch.jit.save or "
           "torch.jit.script(...).save)";
  if (!has_zip_end_record(path))
    return "a truncated or corrupt zip archive (its end record is missing)";
  const std::string concise = compat::concise_error_message(torch_message);
  // PyTorchStreamReader refuses a file format version above the one it reads; the file is fine.
  static const std::regex versions(
      R"(with version (\d+), but the maximum supported version for reading is (\d+))");
  if (std::smatch m; std::regex_search(torch_message, m, versions))
    return "saved by a newer PyTorch than this LibTorch " + compat::torch_version() +
           " reads (file format version " + m[1].str() + ", this LibTorch reads up to " +
           m[2].str() + "): save it with torch " + compat::torch_version() +
           ", or build torchperf against the newer LibTorch (TORCHPERF_LIBTORCH)";
  if (torch_message.find("Unknown builtin op") != std::string::npos)
    return "it calls an operator this LibTorch " + compat::torch_version() +
           " does not have (saved by a newer PyTorch, or a custom operator's library is not "
           "loaded): " + concise;
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    if (has_record(reader, "archive_format"))
      return "a .pt2 archive that is neither a torch.export program (models/*.json) nor an "
             "AOTInductor package (data/aotinductor/)";
    bool has_code = false, has_data = false;
    for (const auto& record : reader.getAllRecords()) {
      if (record.rfind("code/", 0) == 0) has_code = true;
      if (record == "data.pkl") has_data = true;
    }
    if (has_data && !has_code)
      return "a torch.save file (weights or a pickled object), not TorchScript; export the model "
             "with torch.jit.script(model).save(path) or torch.jit.trace";
  } catch (const c10::Error&) {
    return "a zip archive that is not a PyTorch archive (no PyTorch records in it)";
  }
  return "not loadable as TorchScript: " + concise;
}

// What can be said of a model file without loading it, said first: a user fixes the file before
// the flags that feed it (a missing --input is reported only for a file that is a model).
// Returns what the archive holds: TorchScript or a torch.export program.
ArchiveKind check_model_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status))
    throw ModelError("model '" + path + "': no such file (a built-in is written builtin:NAME)");
  if (fs::is_directory(status))
    throw ModelError("model '" + path + "': a folder; expected a model file (TorchScript .pt)");
  if (!fs::is_regular_file(status))
    throw ModelError("model '" + path +
                     "': not a regular file (a pipe or a device); expected a model file");
  if (::access(path.c_str(), R_OK) != 0)
    throw ModelError("model '" + path + "': cannot be read (" + std::strerror(errno) + ")");
  if (!starts_with_bytes(path, "PK\x03\x04") || !has_zip_end_record(path))
    throw ModelError("model '" + path + "': " + diagnose_not_torchscript(path, ""));
  ArchiveKind kind = ArchiveKind::kOther;
  try {
    kind = archive_kind(path);
  } catch (const ModelError&) {
    // The reader refused the archive (a newer file format, a foreign zip): diagnosed below.
  }
  if (kind == ArchiveKind::kExportedProgram) return kind;
  if (kind == ArchiveKind::kAotiPackage)
    throw ModelError("model '" + path + "': an AOTInductor package (already compiled), not a "
                     "torch.export program; pass the file torch.export.save wrote: torchperf "
                     "compiles it for each setting and caches the packages");
  // The zip's directory alone (cheap for any size of model) tells a newer file format, a .pt2,
  // a torch.save file or a foreign zip from TorchScript.
  bool torchscript = false;
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    for (const auto& record : reader.getAllRecords())
      torchscript |= record.rfind("code/", 0) == 0;
    torchscript &= !has_record(reader, "archive_format");
  } catch (const std::exception& e) {
    throw ModelError("model '" + path + "': " + diagnose_not_torchscript(path, e.what()));
  }
  if (!torchscript)
    throw ModelError("model '" + path + "': " +
                     diagnose_not_torchscript(path, "the archive holds no TorchScript code"));
  return kind;
}

// open_model checked the file (check_model_file) before this source existed.
std::unique_ptr<Model> TorchScriptFileSource::load() const {
  torch::jit::Module module;
  try {
    module = torch::jit::load(path_, torch::kCPU);
  } catch (const c10::Error& e) {
    throw ModelError("model '" + path_ + "': " + diagnose_not_torchscript(path_, e.what()));
  } catch (const std::exception& e) {
    throw ModelError("model '" + path_ + "': " + diagnose_not_torchscript(path_, e.what()));
  }
  if (!module.find_method("forward"))
    throw ModelError("model '" + path_ + "': the TorchScript module has no forward method");
  return std::make_unique<TorchScriptModel>(std::move(module));
}

}  // namespace

TorchScriptModel::TorchScriptModel(torch::jit::Module module) : module_(std::move(module)) {}

c10::IValue TorchScriptModel::forward(const std::vector<c10::IValue>& inputs) {
  return module_.forward(inputs);
}

std::vector<std::string> TorchScriptModel::input_names() const {
  std::vector<std::string> names;
  const auto& schema = module_.get_method("forward").function().getSchema();
  for (const auto& arg : schema.arguments())
    if (arg.name() != "self") names.push_back(arg.name());
  return names;
}

std::size_t TorchScriptModel::required_inputs() const {
  std::size_t required = 0;
  const auto& schema = module_.get_method("forward").function().getSchema();
  for (const auto& arg : schema.arguments())
    if (arg.name() != "self" && !arg.default_value()) ++required;
  return required;
}

bool TorchScriptModel::is_training() const {
  return module_.hasattr("training") && module_.is_training();
}

void TorchScriptModel::set_training(bool training) {
  if (module_.hasattr("training")) module_.train(training);
}

void TorchScriptModel::to(c10::Device device) { module_.to(device); }

void TorchScriptModel::to(c10::ScalarType dtype) { module_.to(dtype); }

void TorchScriptModel::replace(torch::jit::Module module) { module_ = std::move(module); }

bool TorchScriptModel::uses_operator(const std::string& qualified_name) const {
  auto graph = module_.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  const auto symbol = c10::Symbol::fromQualString(qualified_name);
  std::vector<torch::jit::Block*> blocks{graph->block()};
  while (!blocks.empty()) {
    auto* block = blocks.back();
    blocks.pop_back();
    for (auto* node : block->nodes()) {
      if (node->kind() == symbol) return true;
      for (auto* sub : node->blocks()) blocks.push_back(sub);
    }
  }
  return false;
}

std::unique_ptr<ModelSource> open_model(const std::string& reference) {
  if (reference.rfind(kBuiltinPrefix, 0) == 0)
    return std::make_unique<BuiltinSource>(
        find_builtin(reference.substr(sizeof(kBuiltinPrefix) - 1)));
  if (check_model_file(reference) == ArchiveKind::kExportedProgram)
    return std::make_unique<ExportedProgramSource>(reference);
  return std::make_unique<TorchScriptFileSource>(reference);
}

std::string model_format_notice(const std::string& reference) {
  if (reference.rfind(kBuiltinPrefix, 0) == 0 || !starts_with_bytes(reference, "PK\x03\x04") ||
      !has_zip_end_record(reference))
    return "";
  try {  // only the zip's directory is read: cheap for any size of model
    caffe2::serialize::PyTorchStreamReader reader(reference);
    bool has_code = false;
    for (const auto& record : reader.getAllRecords()) has_code |= record.rfind("code/", 0) == 0;
    if (!has_code) return "";
  } catch (const std::exception&) {
    return "";  // loading it says what is wrong
  }
  return "TorchScript is deprecated in PyTorch 2.x: '" + reference +
         "' still loads, but torch.export (.pt2) is the format to move to";
}

void save_torchscript(const torch::jit::Module& module, const std::string& path) {
  std::ostringstream bytes;
  module.save(bytes);
  write_file_whole(path, bytes.str());
}

void write_file_whole(const std::string& path, const std::string& data) {
  std::error_code ec;
  // A device (/dev/null, /dev/full) is written as it is; a file by way of a partial one.
  const bool special = std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec);
  const std::string target = special ? path : path + ".partial-" + std::to_string(::getpid());
  errno = 0;
  std::ofstream out(target, std::ios::binary | std::ios::trunc);
  if (out) out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (out) out.flush();
  const int error = errno;
  const bool written = static_cast<bool>(out);
  out.close();
  if (!written || out.fail()) {
    if (!special) std::filesystem::remove(target, ec);
    throw RuntimeFailure("cannot write '" + path + "': " +
                         (error ? std::strerror(error) : "the write failed") +
                         " (nothing was written)");
  }
  if (!special) {
    std::filesystem::rename(target, path, ec);
    if (ec) {
      std::filesystem::remove(target, ec);
      throw RuntimeFailure("cannot write '" + path + "': " + ec.message());
    }
  }
}

}  // namespace torchperf

// A loaded, runnable model behind a small interface: a TorchScript module (deprecated in PyTorch
// 2.x), or a torch.export program compiled by AOTInductor (exported_model.h).
#pragma once

#include <torch/script.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/feed/input_spec.h"
#include "torchperf/feed/length_distribution.h"

namespace torchperf {

class TorchScriptModel;
class ExportedProgramModel;
struct ProgramSignature;

class Model {
 public:
  virtual ~Model() = default;
  virtual c10::IValue forward(const std::vector<c10::IValue>& inputs) = 0;
  // Names of forward's arguments (without self), for messages and input checks.
  virtual std::vector<std::string> input_names() const = 0;
  // How many leading arguments have no default value (the rest may be left out).
  virtual std::size_t required_inputs() const = 0;
  virtual bool is_training() const = 0;
  virtual void set_training(bool training) = 0;
  virtual void to(c10::Device device) = 0;
  virtual void to(c10::ScalarType dtype) = 0;
  // The graph-level view, for knobs that transform TorchScript graphs; null for other kinds.
  virtual TorchScriptModel* as_torchscript() { return nullptr; }
  // The torch.export view, for the knobs that decide how a program is compiled; null for others.
  virtual ExportedProgramModel* as_exported() { return nullptr; }
};

class TorchScriptModel final : public Model {
 public:
  explicit TorchScriptModel(torch::jit::Module module);

  c10::IValue forward(const std::vector<c10::IValue>& inputs) override;
  std::vector<std::string> input_names() const override;
  std::size_t required_inputs() const override;
  bool is_training() const override;
  void set_training(bool training) override;
  void to(c10::Device device) override;
  void to(c10::ScalarType dtype) override;
  TorchScriptModel* as_torchscript() override { return this; }

  torch::jit::Module& module() { return module_; }
  // Swaps in a transformed module (frozen, optimised) and re-binds forward.
  void replace(torch::jit::Module module);
  // Whether forward's graph (with calls inlined) contains an operator, e.g. "aten::conv2d".
  bool uses_operator(const std::string& qualified_name) const;

 private:
  torch::jit::Module module_;
};

// Where a model comes from: a file or a built-in. Loading twice gives two independent models with
// identical weights, so each configuration transforms its own copy.
class ModelSource {
 public:
  virtual ~ModelSource() = default;
  virtual std::string name() const = 0;
  // Its first form: TorchScript for a built-in or a TorchScript file, the program for a .pt2.
  virtual std::unique_ptr<Model> load() const = 0;
  // Built-ins know how they are fed; files do not.
  virtual std::optional<InputSpec> default_inputs() const { return std::nullopt; }
  // Its torch.export program, where it has one (a .pt2 file, a built-in): the path, its
  // signature, and the program loaded (as an ExportedProgramModel). "" / null when it has none.
  virtual std::string program_path() const { return ""; }
  virtual const ProgramSignature* program_signature() const { return nullptr; }
  virtual std::unique_ptr<Model> load_program() const { return nullptr; }
  // The workload's named dimensions vary over dims (issue 52): a source that exports its program
  // exports them dynamic; a program file is checked to take them (WorkloadError if it does not).
  virtual void vary(const InputSpec& /*spec*/, const std::vector<NamedDim>& /*dims*/) {}
};

// "builtin:NAME[:PRESET]" or a path to a TorchScript file. Throws ModelError for a missing or
// unreadable file, UsageError for an unknown built-in.
std::unique_ptr<ModelSource> open_model(const std::string& reference);

// The one line a user should read about the format of the model they gave, or "" (a built-in):
// TorchScript files still load, but the format is deprecated in PyTorch 2.x.
std::string model_format_notice(const std::string& reference);

// Writes a TorchScript module to `path` whole or not at all: serialized in memory first (LibTorch's
// file writer aborts the process from its destructor when the disk is full), then written beside
// `path` and renamed over it. RuntimeFailure naming the path and the system's reason otherwise.
void save_torchscript(const torch::jit::Module& module, const std::string& path);
// The same for bytes in hand (a program copied, issue 84: a full disk said "filesystem error:
// cannot copy file: Input/output error [from] [to]"): RuntimeFailure naming the path and the
// system's reason, and nothing left behind.
void write_file_whole(const std::string& path, const std::string& bytes);

}  // namespace torchperf

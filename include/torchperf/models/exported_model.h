// A torch.export program (.pt2) as a Model: the precision and device knobs choose how it is
// compiled, the graph knob compiles it with AOTInductor (cached) and loads the package, and
// forward runs the package (torch::inductor::AOTIModelPackageLoader). Its eager fp32 reference
// comes from PyTorch running the program in the Python side: C++ has no eager runner for it.
#pragma once

#include <memory>
#include <optional>

#include "torchperf/models/aoti_package.h"
#include "torchperf/models/exported_program.h"
#include "torchperf/models/model.h"

namespace torch::inductor {
class AOTIModelPackageLoader;
}

namespace torchperf {

class ExportedProgramModel final : public Model {
 public:
  ExportedProgramModel(std::string path, ProgramSignature signature);
  ~ExportedProgramModel() override;

  c10::IValue forward(const std::vector<c10::IValue>& inputs) override;
  std::vector<std::string> input_names() const override;
  std::size_t required_inputs() const override { return signature_.inputs.size(); }
  bool is_training() const override { return false; }
  void set_training(bool training) override;
  void to(c10::Device device) override;
  void to(c10::ScalarType dtype) override;
  ExportedProgramModel* as_exported() override { return this; }

  const std::string& path() const { return path_; }
  const ProgramSignature& signature() const { return signature_; }
  // The limits of a compile this model starts (tune and bench set them from their options).
  void set_compile_limits(const CommandLimits& limits) { limits_ = limits; }
  // Compiles (or finds in the cache) the package for the options the knobs chose, and loads it.
  void compile(bool max_autotune);
  const std::optional<CompiledPackage>& compiled() const { return compiled_; }

  // The program run eagerly by PyTorch in the Python side (fp32, no_grad) on these inputs, with
  // PyTorch's FLOP count of the call when asked.
  std::vector<at::Tensor> eager_outputs(const std::vector<c10::IValue>& inputs,
                                        std::uint64_t* flops_per_call) const;

 private:
  std::string path_;
  ProgramSignature signature_;
  AotiOptions options_;
  CommandLimits limits_;
  std::optional<CompiledPackage> compiled_;
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
};

}  // namespace torchperf

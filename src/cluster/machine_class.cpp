#include "torchperf/cluster/machine_class.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace torchperf {

namespace {

constexpr const char* kSeparator = " | ";

std::vector<std::string> fields_of(const std::string& machine_class) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    const std::size_t at = machine_class.find(kSeparator, from);
    out.push_back(machine_class.substr(from, at - from));
    if (at == std::string::npos) return out;
    from = at + 3;
  }
}

}  // namespace

std::string machine_class_of(const Environment& e) {
  std::vector<std::string> isa = e.cpu_isa;
  std::sort(isa.begin(), isa.end());
  std::string isa_text;
  for (const auto& flag : isa) isa_text += (isa_text.empty() ? "" : " ") + flag;
  std::string gpus;
  for (const auto& name : e.gpu_names) gpus += (gpus.empty() ? "" : ", ") + name;
  const std::string gpu =
      e.cuda_devices > 0
          ? fmt::format("gpu {} x {} (driver {})", e.cuda_devices, gpus, e.gpu_driver)
          : std::string("gpu none");
  return fmt::format("cpu {}{}cores {} of {}{}isa {}{}{}{}torch {}", e.cpu_model, kSeparator,
                     e.usable_cores, e.logical_cores, kSeparator,
                     isa_text.empty() ? "none" : isa_text, kSeparator, gpu, kSeparator,
                     e.torch_version);
}

std::string machine_class_difference(const std::string& ours, const std::string& theirs) {
  const auto a = fields_of(ours), b = fields_of(theirs);
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string x = i < a.size() ? a[i] : "", y = i < b.size() ? b[i] : "";
    if (x != y) return "'" + x + "' against '" + y + "'";
  }
  return "";
}

}  // namespace torchperf

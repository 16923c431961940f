// What `lint` reports: one performance anti-pattern found in a model's graph or in the process,
// where it is, the evidence, and the fix. Torch-free, so reports render and test without a model.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace torchperf {

enum class Severity { kInfo, kWarning, kError };
std::string to_string(Severity severity);
// "info", "warning", "error"; throws UsageError naming them.
Severity parse_severity(const std::string& text);

struct Finding {
  std::string rule;  // "conv-bias-before-bn", "size-multiple", "host-sync", …
  Severity severity = Severity::kWarning;
  std::string module;    // module path ("layer1.0.conv1"), "" for the top-level forward
  std::string source;    // "resnet.py:92" where TorchScript kept the source, else ""
  std::string op;        // the operator found, e.g. "aten::item"
  std::string evidence;  // what was seen, with its figures
  std::string fix;       // what to change
  bool fixable = false;  // lint --fix has a rewrite for it
};

struct LintReport {
  std::string model;
  std::string vector_evidence;  // the CPU's vector width, behind the size rule's multiple
  std::vector<Finding> findings;
  std::size_t count_at_least(Severity severity) const;
};

}  // namespace torchperf

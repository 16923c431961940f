#include "knob_flags.h"

namespace torchperf::cli {

std::string knob_flag(const Knob& knob) {
  std::string flag = knob.name;
  for (auto& c : flag)
    if (c == '_') c = '-';
  return "--" + flag;
}

std::string knob_values_help(const Knob& knob) {
  if (knob.integer_valued) return describe_integer(knob);
  std::string allowed;
  for (const auto& v : all_values(knob)) allowed += (allowed.empty() ? "" : "|") + v;
  return allowed;
}

void add_knob_flags(CLI::App& cmd, const std::vector<Knob>& knobs,
                    std::shared_ptr<std::map<std::string, std::string>> values) {
  for (const auto& knob : knobs) {
    cmd.add_option_function<std::string>(
        knob_flag(knob), [values, name = knob.name](const std::string& v) { (*values)[name] = v; },
        knob.description + " [" + knob_values_help(knob) + "]" +
            (knob.training && knob.changes_training ? " (changes training)" : ""));
  }
}

}  // namespace torchperf::cli

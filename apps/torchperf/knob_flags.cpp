#include "knob_flags.h"

namespace torchperf::cli {
namespace {

std::string flag_name(const std::string& knob) {
  std::string flag = knob;
  for (auto& c : flag)
    if (c == '_') c = '-';
  return "--" + flag;
}

}  // namespace

void add_knob_flags(CLI::App& cmd, const std::vector<Knob>& knobs,
                    std::shared_ptr<std::map<std::string, std::string>> values) {
  for (const auto& knob : knobs) {
    std::string allowed;
    if (knob.integer_valued) {
      allowed = describe_integer(knob);
    } else {
      for (const auto& v : all_values(knob)) allowed += (allowed.empty() ? "" : "|") + v;
    }
    cmd.add_option_function<std::string>(
        flag_name(knob.name),
        [values, name = knob.name](const std::string& v) { (*values)[name] = v; },
        knob.description + " [" + allowed + "]" +
            (knob.training && knob.changes_training ? " (changes training)" : ""));
  }
}

}  // namespace torchperf::cli

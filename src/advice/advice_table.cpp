#include "torchperf/advice/advice.h"

namespace torchperf {

std::string change_of(const Advice& a, const std::string& value) {
  std::string change = a.knob + "=" + (value.empty() ? a.value : value);
  for (const auto& [knob, with] : a.with) change += "," + knob + "=" + with;
  return change;
}

TextTable advice_table(const std::vector<Advice>& advice) {
  TextTable t;
  t.header = {"rule", "advice", "try", "evidence"};
  for (const auto& a : advice)
    t.rows.push_back({a.rule, a.message,
                      a.knob.empty() ? "-" : change_of(a) + (a.changes_training ? " *" : ""),
                      a.evidence});
  return t;
}

}  // namespace torchperf

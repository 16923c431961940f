#include "torchperf/advice/advice.h"

namespace torchperf {

TextTable advice_table(const std::vector<Advice>& advice) {
  TextTable t;
  t.header = {"rule", "advice", "try", "evidence"};
  for (const auto& a : advice)
    t.rows.push_back({a.rule, a.message,
                      a.knob.empty() ? "-" : a.knob + "=" + a.value + (a.changes_training ? " *" : ""),
                      a.evidence});
  return t;
}

}  // namespace torchperf

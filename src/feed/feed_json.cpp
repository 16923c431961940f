#include "torchperf/feed/feed_json.h"

namespace torchperf {

nlohmann::json feed_json(const InputSpec& spec, const std::vector<NamedDim>& dims) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& t : spec.tensors) {
    nlohmann::json shape = nlohmann::json::array();
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      if (i < t.dim_names.size() && !t.dim_names[i].empty())
        shape.push_back(t.dim_names[i]);
      else
        shape.push_back(t.shape[i]);
    }
    inputs.push_back({{"argument", t.argument.empty() ? nlohmann::json() : nlohmann::json(t.argument)},
                      {"dtype", to_string(t.dtype)},
                      {"shape", shape},
                      {"range", t.has_range ? nlohmann::json::array({t.low, t.high})
                                            : nlohmann::json()}});
  }
  nlohmann::json ranges = nlohmann::json::object();
  for (const auto& d : dims) ranges[d.name] = {d.distribution.min, d.distribution.max};
  return {{"inputs", inputs}, {"dims", ranges}};
}

nlohmann::json feed_schema() {
  return {{"inputs",
           {{"argument", "forward's argument the entry feeds, null for the next in order"},
            {"dtype", "the dtype's name (float32, float16, bfloat16, float64, int64, int32, uint8, bool)"},
            {"shape", "the sizes after the batch: a number, or a named dimension's name"},
            {"range", "[low, high): integers drawn uniformly, floats uniformly; null: floats from "
                      "a unit normal, integers 0 or 1"}}},
          {"dims", "each named dimension's [min, max], the range a program is exported over"}};
}

}  // namespace torchperf

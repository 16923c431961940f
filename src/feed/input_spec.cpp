#include "torchperf/feed/input_spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "torchperf/error.h"
#include "torchperf/text.h"

namespace torchperf {
namespace {

const std::vector<std::pair<DType, std::string>>& dtype_names() {
  static const std::vector<std::pair<DType, std::string>> names = {
      {DType::kFloat32, "float32"}, {DType::kFloat16, "float16"}, {DType::kBFloat16, "bfloat16"},
      {DType::kFloat64, "float64"}, {DType::kInt64, "int64"},     {DType::kInt32, "int32"},
      {DType::kUInt8, "uint8"},     {DType::kBool, "bool"}};
  return names;
}

double parse_number(const std::string& text, const std::string& whole) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw UsageError("input spec '" + whole + "': expected a number in the range, got '" + text +
                   "'");
}

// A letter first, so that "3x224" stays sizes and "x" never starts a name ('x' separates).
bool is_dim_name(const std::string& text) {
  if (text.empty() || !std::isalpha(static_cast<unsigned char>(text[0]))) return false;
  for (char c : text)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

std::string format_number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

TensorSpec parse_tensor(const std::string& raw, const std::string& whole) {
  TensorSpec t;
  std::string body = trim(raw);
  if (body.empty()) throw UsageError("input spec '" + whole + "': an input is empty");
  if (const auto equals = body.find('='); equals != std::string::npos) {
    t.argument = trim(body.substr(0, equals));
    body = trim(body.substr(equals + 1));
    const bool identifier =
        !t.argument.empty() &&
        (std::isalpha(static_cast<unsigned char>(t.argument[0])) || t.argument[0] == '_') &&
        std::all_of(t.argument.begin(), t.argument.end(),
                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!identifier)
      throw UsageError("input spec '" + whole + "': expected ARGUMENT=SPEC with forward's argument "
                       "name before '=' (e.g. attention_mask=int64:S@1..2), got '" + t.argument + "'");
    if (body.empty()) throw UsageError("input spec '" + whole + "': " + t.argument + "= is empty");
  }
  if (const auto at = body.find('@'); at != std::string::npos) {
    const std::string range = body.substr(at + 1);
    body = body.substr(0, at);
    const auto dots = range.find("..");
    if (dots == std::string::npos)
      throw UsageError("input spec '" + whole + "': expected a range LOW..HIGH after '@', got '" +
                       range + "'");
    t.has_range = true;
    t.low = parse_number(range.substr(0, dots), whole);
    t.high = parse_number(range.substr(dots + 2), whole);
    if (!(t.high > t.low))
      throw UsageError("input spec '" + whole + "': range '" + range +
                       "' is empty (HIGH must exceed LOW)");
  }
  if (const auto colon = body.find(':'); colon != std::string::npos) {
    t.dtype = parse_dtype(trim(body.substr(0, colon)));
    body = body.substr(colon + 1);
  }
  if (trim(body).empty())
    throw UsageError("input spec '" + whole +
                     "': expected dimensions like 3x224x224 after the dtype");
  std::istringstream dims(body);
  for (std::string dim; std::getline(dims, dim, 'x');) {
    dim = trim(dim);
    if (is_dim_name(dim)) {
      t.shape.push_back(0);
      t.dim_names.push_back(dim);
      continue;
    }
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(dim, &used);
    } catch (const std::out_of_range&) {
      throw UsageError("input spec '" + whole + "': dimension " + dim + " is too large");
    } catch (const std::exception&) {
      used = 0;
    }
    if (dim.empty() || used != dim.size() || value <= 0)
      throw UsageError("input spec '" + whole +
                       "': expected dimensions like 3x224x224 (positive integers, or a name like S "
                       "whose sizes --dim gives), got '" + body + "'");
    t.shape.push_back(value);
    t.dim_names.emplace_back();
  }
  if (t.has_range && !is_floating(t.dtype)) {
    const bool integral = t.low == std::floor(t.low) && t.high == std::floor(t.high);
    const double max = t.dtype == DType::kBool    ? 2
                       : t.dtype == DType::kUInt8 ? 256
                       : t.dtype == DType::kInt32 ? 2147483648.0
                                                  : 9.2e18;
    const double min = t.dtype == DType::kBool || t.dtype == DType::kUInt8 ? 0 : -max;
    if (!integral || t.low < min || t.high > max)
      throw UsageError("input spec '" + whole + "': a " + to_string(t.dtype) +
                       " range must be whole numbers within [" + format_number(min) + ", " +
                       format_number(max) + "]");
  }
  return t;
}

}  // namespace

std::string to_string(DType dtype) {
  for (const auto& [d, name] : dtype_names())
    if (d == dtype) return name;
  return "unknown";
}

DType parse_dtype(const std::string& name) {
  for (const auto& [d, n] : dtype_names())
    if (n == name) return d;
  if (name == "float" || name == "fp32") return DType::kFloat32;
  if (name == "half" || name == "fp16") return DType::kFloat16;
  if (name == "bf16") return DType::kBFloat16;
  if (name == "long") return DType::kInt64;
  std::string known;
  for (const auto& [d, n] : dtype_names()) known += (known.empty() ? "" : ", ") + n;
  throw UsageError("unknown dtype '" + name + "'; expected one of " + known);
}

bool is_floating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16 ||
         dtype == DType::kFloat64;
}

InputSpec parse_input_spec(const std::string& text) {
  InputSpec spec;
  std::istringstream parts(text);
  for (std::string part; std::getline(parts, part, ';');)
    spec.tensors.push_back(parse_tensor(part, text));
  if (spec.tensors.empty()) throw UsageError("input spec is empty; expected e.g. 3x224x224");
  return spec;
}

std::vector<std::string> InputSpec::named_dims() const {
  std::vector<std::string> names;
  for (const auto& t : tensors)
    for (const auto& name : t.dim_names)
      if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end())
        names.push_back(name);
  return names;
}

InputSpec with_sizes(const InputSpec& spec,
                     const std::vector<std::pair<std::string, std::int64_t>>& sizes) {
  InputSpec sized = spec;
  for (auto& t : sized.tensors)
    for (std::size_t i = 0; i < t.dim_names.size(); ++i) {
      if (t.dim_names[i].empty()) continue;
      const auto found = std::find_if(sizes.begin(), sizes.end(),
                                      [&](const auto& s) { return s.first == t.dim_names[i]; });
      if (found == sizes.end())
        throw UsageError("input spec '" + to_string(spec) + "': dimension " + t.dim_names[i] +
                         " is named but has no distribution; expected --dim " + t.dim_names[i] +
                         "=MIN..MAX (or lognormal:MEDIAN:SIGMA:MIN..MAX, or file:LENGTHS)");
      t.shape[i] = found->second;
      t.dim_names[i].clear();
    }
  return sized;
}

std::string to_string(const InputSpec& spec) {
  std::string out;
  for (const auto& t : spec.tensors) {
    if (!out.empty()) out += ";";
    if (!t.argument.empty()) out += t.argument + "=";
    if (t.dtype != DType::kFloat32) out += to_string(t.dtype) + ":";
    for (std::size_t i = 0; i < t.shape.size(); ++i)
      out += (i ? "x" : "") + (i < t.dim_names.size() && !t.dim_names[i].empty()
                                   ? t.dim_names[i]
                                   : std::to_string(t.shape[i]));
    if (t.has_range) out += "@" + format_number(t.low) + ".." + format_number(t.high);
  }
  return out;
}

bool InputSpec::names_arguments() const {
  return std::any_of(tensors.begin(), tensors.end(),
                     [](const TensorSpec& t) { return !t.argument.empty(); });
}

InputSpec in_forward_order(const InputSpec& spec, const std::vector<std::string>& arguments,
                           std::size_t required, const std::string& model) {
  if (!spec.names_arguments()) return spec;
  std::string takes;
  for (const auto& a : arguments) takes += (takes.empty() ? "" : ", ") + a;
  const std::string where = "model '" + model + "' (forward takes " + takes + ")";
  std::vector<const TensorSpec*> at(arguments.size(), nullptr);
  std::size_t next = 0;  // unnamed entries fill forward's arguments from the first
  bool seen_named = false;
  for (const auto& t : spec.tensors) {
    std::size_t i = next;
    if (t.argument.empty()) {
      if (seen_named)
        throw WorkloadError("input spec '" + to_string(spec) + "': an input without a name after "
                            "a named one; name it too, for " + where);
      ++next;
    } else {
      seen_named = true;
      i = static_cast<std::size_t>(std::find(arguments.begin(), arguments.end(), t.argument) -
                                   arguments.begin());
      if (i == arguments.size())
        throw WorkloadError("input spec: forward has no argument '" + t.argument + "' in " + where);
    }
    if (i >= arguments.size())
      throw WorkloadError("input spec '" + to_string(spec) + "': more inputs than " + where);
    if (at[i])
      throw WorkloadError("input spec '" + to_string(spec) + "': argument '" + arguments[i] +
                          "' is given twice, for " + where);
    at[i] = &t;
  }
  InputSpec ordered;
  std::size_t given = at.size();
  while (given > 0 && !at[given - 1]) --given;
  for (std::size_t i = 0; i < given; ++i) {
    if (!at[i])
      throw WorkloadError("input spec '" + to_string(spec) + "': argument '" + arguments[i] +
                          "' is left out before '" + arguments[given - 1] + "'; torchperf feeds "
                          "forward in order: give it too, for " + where);
    ordered.tensors.push_back(*at[i]);
  }
  if (given < required)
    throw WorkloadError("input spec '" + to_string(spec) + "': argument '" + arguments[given] +
                        "' has no default and is not given, for " + where);
  return ordered;
}

}  // namespace torchperf

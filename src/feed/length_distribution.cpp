#include "torchperf/feed/length_distribution.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

#include "torchperf/error.h"
#include "torchperf/text.h"

namespace torchperf {
namespace {

constexpr const char* kForms = "MIN..MAX, lognormal:MEDIAN:SIGMA:MIN..MAX or file:PATH";

std::int64_t parse_length(const std::string& text, const std::string& whole) {
  if (const auto value = positive_whole_number(text)) return *value;
  throw UsageError("--dim '" + whole + "': expected a positive whole number, got '" + text + "'");
}

double parse_positive(const std::string& text, const std::string& what, const std::string& whole) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !(value > 0) || !std::isfinite(value))
    throw UsageError("--dim '" + whole + "': expected the " + what +
                     " as a positive number, got '" + text + "'");
  return value;
}

void parse_range(const std::string& text, const std::string& whole, LengthDistribution& d) {
  const auto dots = text.find("..");
  if (dots == std::string::npos)
    throw UsageError("--dim '" + whole + "': expected a range MIN..MAX, got '" + text + "'");
  d.min = parse_length(trim(text.substr(0, dots)), whole);
  d.max = parse_length(trim(text.substr(dots + 2)), whole);
  if (d.max < d.min)
    throw UsageError("--dim '" + whole + "': the range " + text + " is empty (MAX is below MIN)");
}

void read_lengths(const std::string& path, const std::string& whole, LengthDistribution& d) {
  std::ifstream in(path);
  if (!in)
    throw UsageError("--dim '" + whole + "': cannot read the lengths file '" + path + "'");
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const auto value = positive_whole_number(t);
    if (!value)
      throw UsageError("lengths file '" + path + "' line " + std::to_string(number) +
                       ": expected one positive whole number, got '" + t + "'");
    d.lengths.push_back(*value);
  }
  if (d.lengths.empty())
    throw UsageError("lengths file '" + path + "': no lengths in it (one positive whole number a line)");
  d.min = *std::min_element(d.lengths.begin(), d.lengths.end());
  d.max = *std::max_element(d.lengths.begin(), d.lengths.end());
}

}  // namespace

std::vector<std::int64_t> LengthDistribution::draw(std::size_t n, std::uint64_t seed) const {
  // mt19937_64 and the distributions below are specified to the bit by the standard except the
  // normal's, whose libstdc++ algorithm is fixed: one build, one stream.
  std::mt19937_64 engine(seed ^ 0x5eed1e57u);
  std::vector<std::int64_t> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (kind) {
      case Kind::kUniform:
        out.push_back(std::uniform_int_distribution<std::int64_t>(min, max)(engine));
        break;
      case Kind::kFile:  // real arrivals keep their order: replayed, from the top again
        out.push_back(lengths[i % lengths.size()]);
        break;
      case Kind::kLogNormal: {
        // Redrawn outside the range rather than clamped, which would pile the tail at MAX; a
        // range far from the median falls back to clamping after 64 tries.
        // Compared as doubles: a draw far in the tail (a large sigma) is no whole number to round.
        std::lognormal_distribution<double> lognormal(std::log(median), sigma);
        const double low = static_cast<double>(min) - 0.5, high = static_cast<double>(max) + 0.5;
        double v = lognormal(engine);
        for (int tries = 0; tries < 64 && !(v >= low && v < high); ++tries) v = lognormal(engine);
        out.push_back(std::clamp<std::int64_t>(
            std::llround(std::clamp(v, static_cast<double>(min), static_cast<double>(max))), min,
            max));
        break;
      }
    }
  }
  return out;
}

std::string range_option(const NamedDim& dim) {
  return dim.name + "=" + std::to_string(dim.distribution.min) + ".." +
         std::to_string(dim.distribution.max);
}

NamedDim parse_dim_option(const std::string& text) {
  const auto eq = text.find('=');
  NamedDim dim;
  if (eq == std::string::npos || trim(text.substr(0, eq)).empty())
    throw UsageError("--dim '" + text + "': expected NAME=DISTRIBUTION, e.g. S=8..512 (" + kForms +
                     ")");
  dim.name = trim(text.substr(0, eq));
  const std::string body = trim(text.substr(eq + 1));
  LengthDistribution& d = dim.distribution;
  d.text = body;
  if (body.rfind("file:", 0) == 0) {
    d.kind = LengthDistribution::Kind::kFile;
    read_lengths(body.substr(5), text, d);
  } else if (body.rfind("lognormal:", 0) == 0) {
    d.kind = LengthDistribution::Kind::kLogNormal;
    const auto parts = split(body.substr(10), ':');
    if (parts.size() != 3)
      throw UsageError("--dim '" + text + "': expected lognormal:MEDIAN:SIGMA:MIN..MAX");
    d.median = parse_positive(parts[0], "median", text);
    d.sigma = parse_positive(parts[1], "sigma", text);
    parse_range(parts[2], text, d);
  } else if (body.find("..") != std::string::npos) {
    parse_range(body, text, d);
  } else {
    throw UsageError("--dim '" + text + "': expected " + kForms + " after '='");
  }
  return dim;
}

void check_distinct(const std::vector<NamedDim>& given) {
  for (std::size_t i = 0; i < given.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (given[i].name == given[j].name)
        throw UsageError("--dim " + given[i].name + " is given twice (" + given[j].name + "=" +
                         given[j].distribution.text + " and " + given[i].name + "=" +
                         given[i].distribution.text + "): expected one --dim per dimension");
}

std::vector<NamedDim> parse_dim_options(const std::vector<std::string>& texts) {
  std::vector<NamedDim> dims;
  for (const auto& t : texts) dims.push_back(parse_dim_option(t));
  check_distinct(dims);
  return dims;
}

std::vector<NamedDim> dims_for(const std::vector<std::string>& named,
                               const std::vector<NamedDim>& given) {
  std::vector<NamedDim> dims;
  check_distinct(given);
  for (const auto& g : given)
    if (std::find(named.begin(), named.end(), g.name) == named.end()) {
      std::string names;
      for (const auto& n : named) names += (names.empty() ? "" : ", ") + n;
      throw UsageError("--dim " + g.name + "=" + g.distribution.text +
                       ": the input spec names no dimension " + g.name +
                       (names.empty() ? std::string(" (it names none: write e.g. int64:S@0..30522)")
                                      : " (it names " + names + ")"));
    }
  for (const auto& name : named) {
    const auto found = std::find_if(given.begin(), given.end(),
                                    [&](const NamedDim& g) { return g.name == name; });
    if (found == given.end())
      throw UsageError("input dimension " + name +
                       " is named but has no distribution; expected --dim " + name +
                       "=MIN..MAX (or lognormal:MEDIAN:SIGMA:MIN..MAX, or file:LENGTHS)");
    dims.push_back(*found);
  }
  return dims;
}

}  // namespace torchperf

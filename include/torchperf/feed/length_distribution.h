// Where a named input dimension's sizes come from (issue 52): given once, as --dim does it, and
// drawn seeded, so every point of a tune is fed the same stream of lengths.
//   S=8..512                       uniform over the whole numbers from 8 to 512
//   S=lognormal:40:0.9:4..512      lognormal with median 40 and sigma 0.9, redrawn outside 4..512
//   S=file:lengths.txt             one length a line (e.g. counted from real data), replayed in
//                                  the file's order (arrival order kept; the seed plays no part)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchperf {

struct LengthDistribution {
  enum class Kind { kUniform, kLogNormal, kFile };
  Kind kind = Kind::kUniform;
  std::int64_t min = 1;
  std::int64_t max = 1;
  double median = 0;  // lognormal
  double sigma = 0;   // lognormal
  std::vector<std::int64_t> lengths;  // file: replayed in order, cycling
  std::string text;                   // as given, for messages and results

  // n lengths, each within [min, max]; the same seed gives the same lengths.
  std::vector<std::int64_t> draw(std::size_t n, std::uint64_t seed) const;
};

struct NamedDim {
  std::string name;
  LengthDistribution distribution;
};

// "NAME=DISTRIBUTION"; throws UsageError naming the option and what was expected (a file that
// cannot be read, or a line in it that is not a positive whole number, is named with its line).
NamedDim parse_dim_option(const std::string& text);
// Every --dim, each parsed; UsageError naming a dimension given twice (the first is not kept in
// silence).
std::vector<NamedDim> parse_dim_options(const std::vector<std::string>& texts);
// UsageError naming a dimension given twice.
void check_distinct(const std::vector<NamedDim>& given);
// "S=4..512": the dimension's name and the range its sizes lie in, what an export needs of it.
std::string range_option(const NamedDim& dim);

// The distributions for a spec's named dimensions, in their order; throws UsageError for a
// named dimension without one, a --dim naming no dimension of the spec, or one given twice.
std::vector<NamedDim> dims_for(const std::vector<std::string>& named,
                               const std::vector<NamedDim>& given);

}  // namespace torchperf

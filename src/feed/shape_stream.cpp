#include "torchperf/feed/shape_stream.h"
#include "torchperf/feed/padded_copy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "torchperf/error.h"
#include "torchperf/feed/inputs.h"
#include "torchperf/text.h"

namespace torchperf {
namespace {

constexpr const char* kPaddingForms = "batch-max, multiple:M, buckets:E1/E2/... or max";

std::int64_t parse_count(const std::string& text, const std::string& whole) {
  if (const auto value = positive_whole_number(text)) return *value;
  throw ConfigError("'" + whole + "': expected a positive whole number, got '" + text + "'");
}

// One sample: its own size for each named dimension.
using Sizes = std::vector<std::pair<std::string, std::int64_t>>;

std::int64_t product(const Sizes& sizes) {
  std::int64_t p = 1;
  for (const auto& [name, size] : sizes) p *= size;
  return p;
}

}  // namespace

std::int64_t PaddingPolicy::padded(std::int64_t longest, std::int64_t distribution_max) const {
  switch (kind) {
    case Kind::kBatchMax:
      return longest;
    case Kind::kMultiple:
      return std::min(std::max(longest, (longest + multiple - 1) / multiple * multiple),
                      std::max(longest, distribution_max));
    case Kind::kBuckets:
      for (std::int64_t edge : edges)  // a dimension shorter than the edges stops at its longest
        if (edge >= longest) return std::min(edge, std::max(longest, distribution_max));
      return longest;  // build_stream refused such edges before any batch was made
    case Kind::kMax:
      return std::max(longest, distribution_max);
  }
  return longest;
}

void copy_padded(at::Tensor region, const at::Tensor& sample) {
  for (std::int64_t d = 0; d < sample.dim(); ++d) region = region.narrow(d, 0, sample.size(d));
  region.copy_(sample);
}

PaddingPolicy parse_padding(const std::string& raw) {
  const std::string text = trim(raw);
  PaddingPolicy p;
  p.text = text;
  if (text == "batch-max") return p;
  if (text == "max") {
    p.kind = PaddingPolicy::Kind::kMax;
    return p;
  }
  if (text.rfind("multiple:", 0) == 0) {
    p.kind = PaddingPolicy::Kind::kMultiple;
    p.multiple = parse_count(trim(text.substr(9)), "padding=" + text);
    return p;
  }
  if (text.rfind("buckets:", 0) == 0) {
    p.kind = PaddingPolicy::Kind::kBuckets;
    // '/' between edges: a configuration string separates its knobs with commas.
    std::string edges = text.substr(8);
    std::replace(edges.begin(), edges.end(), ',', '/');
    for (const auto& edge : split(edges, '/'))
      p.edges.push_back(parse_count(edge, "padding=" + text));
    if (!std::is_sorted(p.edges.begin(), p.edges.end()) ||
        std::adjacent_find(p.edges.begin(), p.edges.end()) != p.edges.end())
      throw ConfigError("'padding=" + text + "': expected bucket edges in ascending order");
    return p;
  }
  throw ConfigError("'padding=" + text + "': expected " + kPaddingForms);
}

BatchingOrder parse_batching(const std::string& raw) {
  const std::string text = trim(raw);
  BatchingOrder b;
  b.text = text;
  if (text == "arrival") return b;
  if (text.rfind("sorted:", 0) == 0) {
    b.window = parse_count(trim(text.substr(7)), "batching=" + text);
    return b;
  }
  throw ConfigError("'batching=" + text + "': expected arrival or sorted:W (sort each window of W "
                    "samples by length before forming batches)");
}

std::vector<std::pair<std::string, std::int64_t>> typical_sizes(const std::vector<NamedDim>& dims,
                                                                std::uint64_t seed) {
  std::vector<std::pair<std::string, std::int64_t>> sizes;
  for (const auto& d : dims) {
    auto lengths = d.distribution.draw(1001, seed);
    std::nth_element(lengths.begin(), lengths.begin() + 500, lengths.end());
    sizes.emplace_back(d.name, lengths[500]);
  }
  return sizes;
}

// Each batch's longest, as the guides' start forms its batches: each window of 256 lengths sorted,
// then cut into batches (the lengths a file holds, or 4,096 drawn).
std::vector<std::int64_t> batch_longest_lengths(const LengthDistribution& distribution,
                                                std::int64_t batch, std::uint64_t seed) {
  std::vector<std::int64_t> lengths = distribution.kind == LengthDistribution::Kind::kFile
                                          ? distribution.lengths
                                          : distribution.draw(4096, seed);
  constexpr std::size_t kGuidesWindow = 256;
  const auto per = static_cast<std::size_t>(std::max<std::int64_t>(1, batch));
  std::vector<std::int64_t> maxima;
  const std::size_t n = lengths.size();
  for (std::size_t w = 0; w < n; w += kGuidesWindow) {
    const std::size_t end = std::min(n, w + kGuidesWindow);
    std::sort(lengths.begin() + static_cast<std::ptrdiff_t>(w),
              lengths.begin() + static_cast<std::ptrdiff_t>(end));
    for (std::size_t b = w; b < end; b += per) maxima.push_back(lengths[std::min(end, b + per) - 1]);
  }
  std::sort(maxima.begin(), maxima.end());
  return maxima;
}

std::size_t padded_widths(const PaddingPolicy& padding,
                          const std::vector<std::int64_t>& batch_longest,
                          std::int64_t distribution_max) {
  std::set<std::int64_t> widths;
  for (const std::int64_t longest : batch_longest)
    widths.insert(padding.padded(longest, distribution_max));
  return widths.size();
}

// The edges are chosen for the batches the guides' start forms (batch_longest_lengths), and the
// edges that minimise the padded length of those batches are found by dynamic programming over
// candidate edges.
std::string suggested_buckets(const LengthDistribution& distribution, std::int64_t batch,
                              std::uint64_t seed) {
  const std::vector<std::int64_t> maxima = batch_longest_lengths(distribution, batch, seed);
  if (maxima.empty()) return "buckets:" + std::to_string(distribution.max);
  const std::int64_t longest = std::max(maxima.back(), distribution.max);
  // Candidate edges: multiples of 8 (kernels like them) up to the longest, and the longest.
  std::vector<std::int64_t> candidates;
  for (std::int64_t e = 8; e < longest; e += 8) candidates.push_back(e);
  candidates.push_back(longest);
  const std::size_t m = candidates.size();
  std::vector<double> below(m);  // batches whose longest is at most the edge
  for (std::size_t i = 0; i < m; ++i)
    below[i] = static_cast<double>(std::upper_bound(maxima.begin(), maxima.end(), candidates[i]) -
                                   maxima.begin());
  // cost[k][i]: the least padded length of the batches up to candidate i with k edges, the last
  // at candidate i.
  constexpr std::size_t kMaxEdges = 4;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> cost(kMaxEdges + 1, std::vector<double>(m, inf));
  std::vector<std::vector<std::size_t>> from(kMaxEdges + 1, std::vector<std::size_t>(m, m));
  for (std::size_t i = 0; i < m; ++i) cost[1][i] = below[i] * static_cast<double>(candidates[i]);
  for (std::size_t k = 2; k <= kMaxEdges; ++k)
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < i; ++j) {
        const double c = cost[k - 1][j] + (below[i] - below[j]) * static_cast<double>(candidates[i]);
        if (c < cost[k][i]) {
          cost[k][i] = c;
          from[k][i] = j;
        }
      }
  // The fewest edges within 1% of the best: each edge is a shape to compile and warm.
  double best = inf;
  for (std::size_t k = 1; k <= kMaxEdges; ++k) best = std::min(best, cost[k][m - 1]);
  std::size_t best_k = kMaxEdges;
  for (std::size_t k = kMaxEdges; k >= 1; --k)
    if (cost[k][m - 1] <= best * 1.01) best_k = k;
  std::vector<std::int64_t> edges;
  for (std::size_t k = best_k, i = m - 1; k >= 1 && i < m; i = from[k][i], --k) edges.push_back(candidates[i]);
  std::reverse(edges.begin(), edges.end());
  std::string text = "buckets:";
  for (std::size_t i = 0; i < edges.size(); ++i) text += (i ? "/" : "") + std::to_string(edges[i]);
  return text;
}

std::size_t stream_batch_count(const std::vector<NamedDim>& dims, std::int64_t batch) {
  constexpr std::size_t kDrawnBatches = 64, kFewest = 16, kMost = 256;
  std::size_t count = kDrawnBatches;
  for (const auto& d : dims)
    if (d.distribution.kind == LengthDistribution::Kind::kFile) {
      const auto per = static_cast<std::size_t>(std::max<std::int64_t>(1, batch));
      count = std::clamp((d.distribution.lengths.size() + per - 1) / per, kFewest, kMost);
      break;
    }
  return count;
}

std::vector<std::size_t> timed_sample(const ShapeStream& stream, std::size_t n) {
  const std::size_t count = stream.batches.size();
  std::vector<std::size_t> all(count);
  std::iota(all.begin(), all.end(), 0);
  if (n == 0 || n >= count) return all;
  std::vector<std::size_t> by_size = all;
  std::stable_sort(by_size.begin(), by_size.end(), [&](std::size_t a, std::size_t b) {
    return stream.batches[a].padded_elements < stream.batches[b].padded_elements;
  });
  std::vector<std::size_t> chosen;
  for (std::size_t i = 0; i < n; ++i)
    chosen.push_back(by_size[std::min(count - 1, (2 * i + 1) * count / (2 * n))]);
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  return chosen;
}

double ShapeStream::pass_scale() const {
  return timed_padded_elements > 0
             ? static_cast<double>(padded_elements) / static_cast<double>(timed_padded_elements)
             : 1.0;
}

double ShapeStream::padding_share() const {
  return padded_elements > 0
             ? static_cast<double>(padded_elements - useful_elements) / padded_elements
             : 0;
}

std::vector<c10::IValue> typical_inputs(const StreamRecipe& r, std::int64_t batch) {
  const auto typical = typical_sizes(r.dims, r.seed);
  if (r.samples.empty()) return make_inputs(with_sizes(r.spec, typical), batch, r.seed);
  std::size_t best = 0;
  std::int64_t best_gap = -1;
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    std::int64_t gap = 0;
    for (std::size_t k = 0; k < r.dims.size(); ++k) {
      const auto& lengths = r.dims[k].distribution.lengths;
      gap += std::abs(lengths[i % lengths.size()] - typical[k].second);
    }
    if (best_gap < 0 || gap < best_gap) {
      best = i;
      best_gap = gap;
    }
  }
  std::vector<c10::IValue> inputs;
  for (const auto& t : r.samples[best]) {
    std::vector<std::int64_t> repeats(static_cast<std::size_t>(t.dim()) + 1, 1);
    repeats[0] = batch;
    inputs.emplace_back(t.unsqueeze(0).repeat(repeats));
  }
  return inputs;
}

ShapeStream build_stream(const StreamRecipe& r) {
  const auto named = r.spec.named_dims();
  const std::vector<NamedDim> dims = dims_for(named, r.dims);
  if (r.policy.batch <= 0) throw UsageError("a stream needs a positive batch");
  const std::size_t batch_count = r.batches > 0 ? r.batches : stream_batch_count(dims, r.policy.batch);
  if (r.policy.padding.kind == PaddingPolicy::Kind::kBuckets)
    for (const auto& d : dims)
      if (r.policy.padding.edges.empty() || r.policy.padding.edges.back() < d.distribution.max)
        throw ConfigError("'padding=" + r.policy.padding.text + "': the bucket edges do not cover " +
                          d.name + "'s longest length " + std::to_string(d.distribution.max) +
                          " (" + d.name + "=" + d.distribution.text + "); end them at " +
                          std::to_string(d.distribution.max) + " or above");

  // Each sample's sizes, in arrival order; each dimension its own seeded draw.
  const std::size_t count = batch_count * static_cast<std::size_t>(r.policy.batch);
  std::vector<Sizes> samples(count);
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const auto lengths = dims[k].distribution.draw(count, r.seed + 7919 * (k + 1));
    for (std::size_t i = 0; i < count; ++i) samples[i].emplace_back(dims[k].name, lengths[i]);
  }
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  if (r.policy.batching.window > 0)
    for (std::size_t start = 0; start < count; start += r.policy.batching.window) {
      const auto end = std::min(count, start + static_cast<std::size_t>(r.policy.batching.window));
      std::stable_sort(order.begin() + start, order.begin() + end, [&](auto a, auto b) {
        return product(samples[a]) < product(samples[b]);
      });
    }

  ShapeStream stream;
  for (std::size_t b = 0; b < batch_count; ++b) {
    StreamBatch batch;
    const auto first = order.begin() + b * r.policy.batch;
    const std::vector<std::size_t> members(first, first + r.policy.batch);
    Sizes padded;
    for (std::size_t k = 0; k < dims.size(); ++k) {
      std::int64_t longest = 0;
      for (auto i : members) longest = std::max(longest, samples[i][k].second);
      padded.emplace_back(dims[k].name, r.policy.padding.padded(longest, dims[k].distribution.max));
    }
    const InputSpec padded_spec = with_sizes(r.spec, padded);
    for (std::size_t t = 0; t < r.spec.tensors.size(); ++t) {
      std::vector<std::int64_t> shape{r.policy.batch};
      shape.insert(shape.end(), padded_spec.tensors[t].shape.begin(),
                   padded_spec.tensors[t].shape.end());
      batch.inputs.emplace_back(
          at::zeros(shape, at::TensorOptions().dtype(to_scalar_type(r.spec.tensors[t].dtype))));
    }
    for (std::size_t j = 0; j < members.size(); ++j) {
      const std::size_t i = members[j];
      // The sample's own values, seeded by its place in the arrival order, so a sample holds the
      // same values whichever batch and padding it lands in.
      std::vector<c10::IValue> own;
      if (r.samples.empty()) {
        own = make_inputs(with_sizes(r.spec, samples[i]), 1, r.seed + 104729 * (i + 1));
      } else {
        for (const auto& t : r.samples[i % r.samples.size()]) own.emplace_back(t.unsqueeze(0));
      }
      for (std::size_t t = 0; t < own.size(); ++t)
        copy_padded(batch.inputs[t].toTensor()[static_cast<std::int64_t>(j)],
                    own[t].toTensor()[0]);
      batch.lengths.push_back(samples[i].empty() ? 0 : samples[i][0].second);
      batch.sizes.push_back(samples[i]);
      batch.useful_elements += product(samples[i]);
      batch.padded_elements += product(padded);
    }
    batch.padded_length = padded.empty() ? 0 : padded[0].second;
    stream.samples += r.policy.batch;
    stream.useful_elements += batch.useful_elements;
    stream.padded_elements += batch.padded_elements;
    stream.batches.push_back(std::move(batch));
  }
  stream.timed = timed_sample(stream, r.timed_batches);
  for (const std::size_t b : stream.timed) stream.timed_padded_elements += stream.batches[b].padded_elements;
  return stream;
}

std::vector<StreamSlot> padding_check_slots(const ShapeStream& stream) {
  std::vector<StreamSlot> all;
  for (std::size_t b = 0; b < stream.batches.size(); ++b)
    for (std::size_t j = 0; j < stream.batches[b].lengths.size(); ++j)
      all.push_back({b, static_cast<std::int64_t>(j), stream.batches[b].lengths[j]});
  if (all.empty()) return {};
  std::vector<StreamSlot> sorted = all;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const StreamSlot& a, const StreamSlot& b) { return a.length < b.length; });
  std::vector<StreamSlot> chosen;
  for (const StreamSlot& s : {sorted.front(), sorted[sorted.size() / 2], sorted.back()})
    if (std::none_of(chosen.begin(), chosen.end(),
                     [&](const StreamSlot& c) { return c.length == s.length; }))
      chosen.push_back(s);
  return chosen;
}

std::vector<c10::IValue> unpadded_sample(const ShapeStream& stream, const StreamRecipe& recipe,
                                         const StreamSlot& slot) {
  const StreamBatch& batch = stream.batches.at(slot.batch);
  const auto& own = batch.sizes.at(static_cast<std::size_t>(slot.row));
  const auto copies = static_cast<std::int64_t>(batch.sizes.size());
  std::vector<c10::IValue> inputs;
  for (std::size_t t = 0; t < batch.inputs.size(); ++t) {
    at::Tensor x = batch.inputs[t].toTensor().narrow(0, slot.row, 1);
    const auto& names = recipe.spec.tensors.at(t).dim_names;
    for (std::size_t d = 0; d < names.size(); ++d) {
      if (names[d].empty()) continue;
      for (const auto& [name, size] : own)
        if (name == names[d]) x = x.narrow(static_cast<std::int64_t>(d) + 1, 0, size);
    }
    std::vector<std::int64_t> repeats(static_cast<std::size_t>(x.dim()), 1);
    repeats[0] = copies;
    inputs.emplace_back(x.repeat(repeats).contiguous());
  }
  return inputs;
}

std::vector<at::Tensor> unpadded_row(const std::vector<at::Tensor>& outputs) {
  std::vector<at::Tensor> row;
  for (const at::Tensor& t : outputs) row.push_back(t.dim() > 0 ? t.narrow(0, 0, 1) : t);
  return row;
}

std::optional<std::vector<at::Tensor>> cut_to_sample(const std::vector<at::Tensor>& padded,
                                                     std::int64_t row,
                                                     const std::vector<at::Tensor>& unpadded) {
  if (padded.size() != unpadded.size()) return std::nullopt;
  std::vector<at::Tensor> cut;
  for (std::size_t o = 0; o < padded.size(); ++o) {
    const at::Tensor& want = unpadded[o];
    if (padded[o].dim() == 0 || padded[o].dim() != want.dim() || row >= padded[o].size(0))
      return std::nullopt;
    at::Tensor x = padded[o].narrow(0, row, 1);
    for (std::int64_t d = 1; d < x.dim(); ++d) {
      if (x.size(d) == want.size(d)) continue;
      if (x.size(d) < want.size(d)) return std::nullopt;
      x = x.narrow(d, 0, want.size(d));
    }
    cut.push_back(x);
  }
  return cut;
}

}  // namespace torchperf

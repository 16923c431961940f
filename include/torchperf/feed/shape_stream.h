// A workload whose shapes vary (issue 52): samples drawn from the named dimensions' distributions,
// grouped into batches by a batching policy and padded by a padding policy, all built before
// timing, so that a timed call only runs the model and every configuration sees the same samples.
#pragma once

#include <torch/script.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/feed/input_spec.h"
#include "torchperf/feed/length_distribution.h"

namespace torchperf {

// What a batch's named dimensions are padded up to: the batch's longest (batch-max), that rounded
// up to a multiple of M (multiple:M), the first bucket edge that holds it (buckets:E1,E2,...), or
// the distribution's longest (max). Never past the distribution's longest.
struct PaddingPolicy {
  enum class Kind { kBatchMax, kMultiple, kBuckets, kMax };
  Kind kind = Kind::kBatchMax;
  std::int64_t multiple = 1;
  std::vector<std::int64_t> edges;  // ascending
  std::string text;

  std::int64_t padded(std::int64_t longest, std::int64_t distribution_max) const;
};
// Bucket edges are written E1/E2/... (a configuration string separates knobs with commas; commas
// are accepted here too). Throws ConfigError naming the value and the forms expected.
PaddingPolicy parse_padding(const std::string& text);

// How arriving samples become batches: in arrival order, or each window of W sorted by length
// first (the latency a window adds is the wait for its W samples).
struct BatchingOrder {
  std::int64_t window = 0;  // 0: arrival order
  std::string text = "arrival";
};
BatchingOrder parse_batching(const std::string& text);

// A point's decision needs a few batches, not the whole stream (issue 60): a brief measurement
// times a sample of this many batches drawn across the stream's padded sizes, a full one more.
inline constexpr std::size_t kBriefTimedBatches = 3;
inline constexpr std::size_t kFullTimedBatches = 8;

// How a stream's samples become padded batches: the batch, padding and batching knobs' values as
// one typed value, resolved from a configuration once (config's stream_policy_of) and handed to
// what builds the stream (bench) or serves it (serve); no knob writes it into a workload.
struct StreamPolicy {
  std::int64_t batch = 1;  // samples per batch
  PaddingPolicy padding;
  BatchingOrder batching;
};

struct StreamRecipe {
  InputSpec spec;               // with named dimensions
  std::vector<NamedDim> dims;   // one per named dimension, as dims_for gives them
  // Until a configuration's policy is given: the batch bucket edges are designed for.
  StreamPolicy policy;
  // Batches in the stream; 0: stream_batch_count's (a lengths file is covered whole).
  std::size_t batches = 0;
  // Batches a timed pass runs, drawn across the stream (timed_sample); 0: every batch.
  std::size_t timed_batches = kFullTimedBatches;
  std::uint64_t seed = 0;
  // Real samples (an inputs file of them, inputs.h), unbatched, in arrival order: their values
  // fill the batches, sample i having the sizes dims' lengths files give it. Empty: drawn.
  std::vector<std::vector<at::Tensor>> samples;
};

struct StreamBatch {
  std::vector<c10::IValue> inputs;        // padded; padding holds 0
  std::vector<std::int64_t> lengths;      // per sample, the first named dimension's own size
  // per sample, each named dimension's own size
  std::vector<std::vector<std::pair<std::string, std::int64_t>>> sizes;
  std::int64_t padded_length = 0;         // the first named dimension's padded size
  std::int64_t useful_elements = 0;       // per sample the product of its named sizes, summed
  std::int64_t padded_elements = 0;       // the same at the padded sizes
};

struct ShapeStream {
  std::vector<StreamBatch> batches;
  std::int64_t samples = 0;
  std::int64_t useful_elements = 0;  // "tokens" for a sequence model
  std::int64_t padded_elements = 0;
  double padding_share() const;      // the share of padded elements that are padding
  // The batches a timed pass runs (indices into batches, ascending) and their padded elements.
  std::vector<std::size_t> timed;
  std::int64_t timed_padded_elements = 0;
  // How many passes over the timed batches the whole stream weighs: its padded elements over
  // theirs. A pass's time times this estimates the stream's (a ratio estimator: the time per
  // padded element is taken from the sample, the padding share and token mix are the stream's).
  double pass_scale() const;
};

// The batches a stream has by default: a lengths file's every length, once (at least 16
// batches, at most 256); a drawn distribution 64 batches.
std::size_t stream_batch_count(const std::vector<NamedDim>& dims, std::int64_t batch);
// n batches drawn across the stream's padded sizes: the batches ordered by their padded elements,
// the one at the middle of each of n equal slices of that order (every batch when n is 0 or not
// below the count). Ascending indices.
std::vector<std::size_t> timed_sample(const ShapeStream& stream, std::size_t n);

// Each named dimension at its median size (of 1001 seeded draws): the unpadded samples a stream's
// reference, accuracy guard and FLOP count are made at.
std::vector<std::pair<std::string, std::int64_t>> typical_sizes(const std::vector<NamedDim>& dims,
                                                                std::uint64_t seed);
// The typical inputs at batch: drawn at the typical sizes, or (real samples) the first sample
// nearest them, repeated batch times. The reference, the accuracy guard and the FLOP count use them.
std::vector<c10::IValue> typical_inputs(const StreamRecipe& recipe, std::int64_t batch);
// Each batch's longest length, ascending, as the guides' start forms the batches (each window of
// 256 sorted by length, cut into batches of `batch`): what padding and bucket edges are judged on.
std::vector<std::int64_t> batch_longest_lengths(const LengthDistribution& distribution,
                                                std::int64_t batch, std::uint64_t seed);
// The distinct widths those batches have once padded: the shapes a graph per shape compiles.
std::size_t padded_widths(const PaddingPolicy& padding,
                          const std::vector<std::int64_t>& batch_longest,
                          std::int64_t distribution_max);
// Bucket edges a sweep tries for a distribution at a batch size: the edges (the longest always
// one of them, at most four, the fewest within 1% of the best) that minimise the padded length
// of the batches the guides' start forms from its lengths (each window of 256 sorted by length,
// cut into batches of `batch`), each padded to the first edge that holds its longest.
std::string suggested_buckets(const LengthDistribution& distribution, std::int64_t batch,
                              std::uint64_t seed);

// A sample of a built stream, where it lies: its batch and its row there.
struct StreamSlot {
  std::size_t batch = 0;
  std::int64_t row = 0;
  std::int64_t length = 0;  // its first named dimension's own size
};
// The samples padding is checked on: the stream's shortest, the one nearest its median length and
// its longest (fewer when they coincide).
std::vector<StreamSlot> padding_check_slots(const ShapeStream& stream);
// A slot's sample as it arrived: its row of the padded batch cut to its own sizes, repeated to its
// batch's size (no padding): to torch.compile another batch size is a shape of its own (a batch of
// one specialised, a batch of 2 a recompile with the batch dynamic), one the timed batches never need.
// Row 0 of the outputs is the sample's (unpadded_row).
std::vector<c10::IValue> unpadded_sample(const ShapeStream& stream, const StreamRecipe& recipe,
                                         const StreamSlot& slot);
// Row 0 of each output of the unpadded sample's batch: the sample's own.
std::vector<at::Tensor> unpadded_row(const std::vector<at::Tensor>& outputs);
// A slot's row of its padded batch's outputs, each cut down to the shape the unpadded sample's
// output has (padding only lengthens a dimension); nullopt when a shape cannot be cut to it.
std::optional<std::vector<at::Tensor>> cut_to_sample(const std::vector<at::Tensor>& padded,
                                                     std::int64_t row,
                                                     const std::vector<at::Tensor>& unpadded);

// Throws ConfigError when the padding cannot hold a length the distribution gives (bucket edges
// below its longest), UsageError for a named dimension without a distribution.
ShapeStream build_stream(const StreamRecipe& recipe);

}  // namespace torchperf

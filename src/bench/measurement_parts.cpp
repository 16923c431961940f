#include "torchperf/bench/measurement_parts.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "torchperf/compat/torch_error.h"
#include "torchperf/error.h"
#include "torchperf/models/accuracy.h"

namespace torchperf {

OutputQuality quality_of(const Accuracy& a) {
  return {a.comparable, a.note,           a.max_abs_error,   a.max_rel_error,
          a.cosine,     a.top1_agreement, a.nonfinite_values};
}

namespace {

// Why these samples do not support a verdict, or "" when they do (the order is the order a
// user fixes them in: a budget too short for one call, then warm-up, then precision).
std::string inconclusive_reason(const SampleSet& samples, const SamplingOptions& sampling,
                                bool paired) {
  const Summary& sum = samples.summary;
  const double budget_s = to_seconds(sampling.time_budget);
  if (samples.stop == StopReason::kCallOverBudget)
    return fmt::format(
        "one call takes {:.3g} s, longer than the --time budget of {:.3g} s: no sample fits "
        "(raise --time, or pass --allow-overrun to measure anyway)",
        samples.warmup.settled_iteration_ns * 1e-9, budget_s);
  if (samples.stop == StopReason::kBehindLeader)
    return fmt::format(
        "stopped early: clearly behind the tune's leader ({:.3g} ms a call, the leader's pace "
        "{:.3g} ms), its time given to other points",
        sum.min * 1e-6, sampling.leader_iteration_ns * 1e-6);
  if (!samples.warmup.settled)
    return fmt::format(
        "warm-up did not settle within its budget ({} calls in {:.3g} s; raise --time)",
        samples.warmup.iterations, to_seconds(samples.warmup.total));
  if (paired || samples.stop == StopReason::kConfidenceReached) return "";
  if (std::isnan(sum.median_ci_relative))
    return fmt::format(
        "stopping rule not met: {} sample(s) are too few for a {:.0f}% CI of the median (6 at "
        "least; raise --time)",
        sum.count, sampling.confidence * 100);
  return fmt::format(
      "stopping rule not met: the median's {:.0f}% CI is ±{:.2f}%, target ±{:.2f}%, after {} "
      "samples ({})",
      sampling.confidence * 100, sum.median_ci_relative * 100, sampling.target_relative_ci * 100,
      sum.count,
      samples.stop == StopReason::kSampleLimit ? "sample limit reached"
                                               : "raise --time or --target-ci");
}

}  // namespace

SavedOutputs load_saved_outputs(const std::string& path, const std::string& role) {
  // A folder opens as a stream on Linux and fails on its first read, in libstdc++'s words.
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    throw RuntimeFailure(role + " '" + path + "' is a folder; expected a file written by torch.save");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RuntimeFailure(role + " '" + path + "' cannot be opened: " + std::strerror(errno));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) throw RuntimeFailure(role + " '" + path + "' could not be read");
  const std::string expected =
      "expected saved outputs: torch.save((list_of_tensors, flops)) or a list of tensors";
  c10::IValue saved_value;
  try {
    saved_value = torch::jit::pickle_load(bytes);
  } catch (const std::exception& e) {
    throw RuntimeFailure(role + " '" + path + "' is not a pickle torchperf reads (" +
                         compat::concise_error_message(e.what()) + "); " + expected);
  }
  // Each type looked at before it is taken: LibTorch's to*() assert (INTERNAL ASSERT FAILED, "report
  // a bug to PyTorch") on a value of another type, which is the file's fault, not PyTorch's.
  // C++ writes (List[Tensor], int); Python's torch.save of (list, float) reads as a generic list
  // and a double.
  c10::IValue tensors = saved_value, flops;
  SavedOutputs saved;
  if (saved_value.isTuple()) {
    const auto& elements = saved_value.toTupleRef().elements();
    if (elements.empty())
      throw RuntimeFailure(role + " '" + path + "' holds an empty tuple; " + expected);
    // (tensors, flops) only when it is exactly that; any other tuple is its outputs, each a
    // tensor (a second output is never taken for a FLOP count).
    if (elements.size() == 2 && (elements[0].isList() || elements[0].isTensor()) &&
        (elements[1].isInt() || elements[1].isDouble())) {
      tensors = elements[0];
      flops = elements[1];
    } else {
      for (std::size_t i = 0; i < elements.size(); ++i) {
        if (!elements[i].isTensor())
          throw RuntimeFailure(fmt::format("{} '{}': element {} is a {}, not a tensor; {}", role,
                                           path, i, elements[i].tagKind(), expected));
        saved.outputs.push_back(elements[i].toTensor());
      }
      return saved;
    }
  }
  if (tensors.isTensor()) {
    saved.outputs.push_back(tensors.toTensor());
  } else if (tensors.isList()) {
    const auto list = tensors.toListRef();
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!list[i].isTensor())
        throw RuntimeFailure(fmt::format("{} '{}': element {} is a {}, not a tensor; {}", role,
                                         path, i, list[i].tagKind(), expected));
      saved.outputs.push_back(list[i].toTensor());
    }
  } else {
    throw RuntimeFailure(
        fmt::format("{} '{}' holds a {}; {}", role, path, tensors.tagKind(), expected));
  }
  if (flops.isInt())
    saved.flops_per_sample = static_cast<std::uint64_t>(std::max<std::int64_t>(0, flops.toInt()));
  if (flops.isDouble())
    saved.flops_per_sample = static_cast<std::uint64_t>(std::max(0.0, flops.toDouble()));
  return saved;
}

double Measurement::samples_per_call() const {
  if (stream && stream->pass_scale > 0) return static_cast<double>(stream->samples) / stream->pass_scale;
  return static_cast<double>(batch);
}

void add_timing(Measurement& m, const SampleSet& samples, const SamplingOptions& sampling,
                bool paired) {
  m.paired = paired;
  m.samples = samples;
  const Summary& sum = samples.summary;
  const double batch = m.samples_per_call();
  if (sum.median > 0) {
    m.throughput_samples_per_s = batch / (sum.median * 1e-9);
    m.throughput_ci = {batch / (sum.median_ci.high * 1e-9), batch / (sum.median_ci.low * 1e-9)};
    m.achieved_gflops =
        static_cast<double>(m.flops_per_sample) * m.throughput_samples_per_s / 1e9;
    if (m.stream) {
      // The FLOPs were counted at the typical length, not on the stream's mix of lengths.
      m.achieved_gflops = 0;
      m.stream->tokens_per_s = static_cast<double>(m.stream->useful_tokens) /
                               (sum.median * m.stream->pass_scale * 1e-9);
    }
  }
  // A stream's latency is per pass over the whole stream, estimated from its timed passes.
  const double per_call = m.stream ? m.stream->pass_scale : 1.0;
  m.latency_p50_ms = sum.median * per_call * 1e-6;
  m.latency_p90_ms = sum.p90 * per_call * 1e-6;
  m.latency_p99_ms = sum.p99 * per_call * 1e-6;
  m.inconclusive_reason = inconclusive_reason(samples, sampling, paired);
}

void add_page_faults(Measurement& m, double faults_per_iteration) {
  m.page_faults_per_iteration = faults_per_iteration;
  if (faults_per_iteration > kPageFaultsNearZero)
    m.advice.push_back(fmt::format(
        "{:.0f} minor page faults per call in steady state: the allocator returns freed memory "
        "to the kernel and faults it in again every call; try the allocator knob (allocator="
        "glibc-tuned or jemalloc; torchperf tune --space 'allocator=glibc,glibc-tuned,jemalloc')",
        faults_per_iteration));
}

void add_padding_check(Measurement& m, const std::vector<PaddedRun>& runs) {
  if (runs.empty() || !m.stream) return;
  Accuracy worst;
  std::vector<std::int64_t> lengths;
  for (const PaddedRun& r : runs) {
    const std::vector<at::Tensor> alone = unpadded_row(r.alone);
    const auto cut = cut_to_sample(r.padded, r.slot.row, alone);
    Accuracy a;
    if (cut) {
      a = compare_outputs(alone, *cut);
    } else {
      a.comparable = false;
      a.note = "a padded output at length " + std::to_string(r.slot.length) +
               " cannot be cut to the unpadded sample's shape";
    }
    lengths.push_back(r.slot.length);
    const bool worse = lengths.size() == 1 || (!a.comparable && worst.comparable) ||
                       (a.comparable == worst.comparable && a.cosine < worst.cosine);
    if (worse) worst = a;
  }
  m.stream->padding_check_lengths = lengths;
  m.stream->padding_check = quality_of(worst);
  // Folded into the quality the guard reads: a policy that changes an answer is caught.
  OutputQuality& q = m.quality;
  q.comparable = q.comparable && worst.comparable;
  if (!worst.comparable) q.note += (q.note.empty() ? "" : "; ") + ("padding: " + worst.note);
  q.cosine = std::min(q.cosine, worst.cosine);
  q.max_abs_error = std::max(q.max_abs_error, worst.max_abs_error);
  q.max_rel_error = std::max(q.max_rel_error, worst.max_rel_error);
  if (q.top1_agreement && worst.top1_agreement)
    q.top1_agreement = std::min(*q.top1_agreement, *worst.top1_agreement);
  if (!worst.comparable)
    m.warnings.push_back("padded outputs not comparable with the unpadded samples': " + worst.note);
  else if (worst.cosine < 0.999)
    m.warnings.push_back(fmt::format("padding changes the answer: cosine {:.6f} between a sample "
                                     "padded in its batch and run alone (does the model take an "
                                     "attention mask?)",
                                     worst.cosine));
}

void add_output_check(Measurement& m, const std::vector<at::Tensor>& reference,
                      const std::vector<at::Tensor>& output) {
  m.quality = quality_of(compare_outputs(reference, output));
  const std::int64_t ref_nonfinite = count_nonfinite(reference);
  if (ref_nonfinite > 0) {
    m.valid = false;
    m.invalid_reason =
        "the fp32 reference output itself has " + std::to_string(ref_nonfinite) + " NaN/Inf values";
  } else if (m.quality.nonfinite_values > 0) {
    m.valid = false;
    m.invalid_reason =
        "output has " + std::to_string(m.quality.nonfinite_values) + " NaN/Inf values";
  }
  if (!m.quality.comparable)
    m.warnings.push_back("output not comparable with the reference: " + m.quality.note);
}

}  // namespace torchperf

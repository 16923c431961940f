// The parts of a measurement that every runtime shares (this process, a C++ worker, the Python
// worker): the timing taken from the sampler's samples, the outputs judged against the fp32
// reference, and the reference file's format. One definition, so no runtime is judged apart.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "torchperf/bench/measurement.h"
#include "torchperf/measure/sampler.h"
#include "torchperf/models/accuracy.h"
#include "torchperf/feed/shape_stream.h"

namespace torchperf {

// Outputs saved to a file as torch.save((tensors, flops_per_sample)) or its C++ pickle: the fp32
// reference tune shares among its workers, and what the Python worker's finish saves.
struct SavedOutputs {
  std::vector<at::Tensor> outputs;
  std::uint64_t flops_per_sample = 0;
};
// RuntimeFailure naming the file by its role ("reference file", "outputs file") and what it holds.
SavedOutputs load_saved_outputs(const std::string& path,
                                const std::string& role = "reference file");

// Throughput (and its interval), latency percentiles and achieved GFLOP/s from the samples, with
// why the timing is inconclusive when it is; m.batch and m.flops_per_sample set before. paired:
// the samples come from an interleaved comparison, whose stopping rule is the ratio's.
void add_timing(Measurement& m, const SampleSet& samples, const SamplingOptions& sampling,
                bool paired);

// The steady state's minor page faults per call, and the allocator advice when they are many.
void add_page_faults(Measurement& m, double faults_per_iteration);

// The output against the reference: quality, and an invalid measurement when either holds NaN or
// Inf values.
void add_output_check(Measurement& m, const std::vector<at::Tensor>& reference,
                      const std::vector<at::Tensor>& output);

// One sample of a stream run both ways in one configuration: its padded batch's outputs and its
// own, run alone unpadded (shape_stream.h's padding_check_slots say which samples).
struct PaddedRun {
  StreamSlot slot;
  std::vector<at::Tensor> padded;  // the whole batch's, on the CPU
  std::vector<at::Tensor> alone;
};
// A stream's padding check, the worst of its samples: kept with the stream's figures and folded
// into the quality the accuracy guard reads, with a warning when padding changes an answer (a
// model without an attention mask). Call after add_output_check.
void add_padding_check(Measurement& m, const std::vector<PaddedRun>& runs);

// An output comparison as a measurement states it (serve's padding check judges it the same way).
OutputQuality quality_of(const Accuracy& a);

}  // namespace torchperf

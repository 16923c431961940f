// Real samples as requests (`load --inputs-file`, issue 84): tokenised text, say, replayed against
// a server instead of generated values. Torch-free; the file is read with LibTorch inside.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "torchperf/serve/inference_request.h"
#include "torchperf/serve/inference_response.h"

namespace torchperf {

struct RequestSample {
  std::vector<WireTensor> inputs;  // one sample (a batch of 1), in the server's input order
  std::int64_t length = 0;         // its first varying dimension's size (0: none varies)
};

// The samples of a file bench reads as real samples (a torch.save list of tuples, or of dicts of
// forward's argument -> tensor, without the batch dimension), each as the server takes it: by
// name where the samples name their inputs, else in order; converted to the server's datatype
// where both are floating or both integer. UsageError naming the file and the input for a sample
// that does not fit the server's inputs (a name it lacks, a count, a float for an integer).
std::vector<RequestSample> request_samples(const std::string& path,
                                           const std::vector<WireTensorSpec>& inputs);

}  // namespace torchperf

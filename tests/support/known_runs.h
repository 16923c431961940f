// Synthetic runs with known effects shared by the report and CLI tests.
#pragma once

#include "support/synthetic_run.h"

namespace torchperf::testing {

// resnet18-like: threads=1 hurts (0.7x); bf16 autocast helps (1.2x); channels_last helps 1.3x
// but only with bf16; grad does nothing. 16 points; one failed, one guarded out.
SyntheticRun known_run();

}  // namespace torchperf::testing

// Advice from a profiler trace, on train's rule engine (train/advice.h: the same Advice record,
// shares of the step as weights, the same thresholds where a rule is the same): each rule that
// applies to a trace, its threshold named here, and the evidence it fired on. Torch-free.
#pragma once

#include <vector>

#include "torchperf/trace/trace.h"
#include "torchperf/trace/trace_overview.h"
#include "torchperf/trace/trace_views.h"
#include "torchperf/advice/advice.h"

namespace torchperf {

// Below this device utilisation a trace's step leaves the device idle (train's threshold).
inline constexpr double kTraceUtilisationThreshold = kUtilisationThreshold;
// Host-to-device copies from pageable memory taking more than this share of the step.
inline constexpr double kPageableCopyThreshold = 0.01;
// Short kernels (shorter on the GPU than their launch on the CPU) above this share of kernels.
inline constexpr double kShortKernelThreshold = 0.30;
// Synchronising calls taking more than this share of the step.
inline constexpr double kSyncThreshold = 0.01;
// Exposed communication (not overlapped by computation) above this share of the step.
inline constexpr double kCommunicationThreshold = 0.10;
// CUDA's launch queue holds this many events a stream (HTA's CUDA_MAX_LAUNCH_QUEUE_PER_STREAM);
// filled to this share, the host waits in its launch calls for the device.
inline constexpr std::int64_t kLaunchQueueLimit = 1024;
inline constexpr double kFullQueueThreshold = 0.90;
// Kernel time in 16-bit floating point below this share, on tensor-core hardware.
inline constexpr double kReducedPrecisionThreshold = 0.10;

// Whether a kernel's name says it computes in fp16 or bf16 (cuBLAS/CUTLASS/cuDNN naming:
// "h1688gemm", "f16", "bf16", "half", "hmma" …).
bool reduced_precision_kernel(const std::string& name);

// Host calls that wait for the device: aten::item / _local_scalar_dense, stream, device and event
// synchronisation, synchronous copies. (cudaStreamWaitEvent is not one: the host goes on.)
bool synchronising_call(const std::string& name);

std::vector<Advice> advise_trace(const Trace& trace, const TraceOverview& overview,
                                 const std::vector<KernelRow>& kernels,
                                 const LaunchStats& launches);

}  // namespace torchperf

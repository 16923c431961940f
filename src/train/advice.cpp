#include "torchperf/train/advice.h"

#include <algorithm>

#include <fmt/format.h>
#include "torchperf/page/text_table.h"

namespace torchperf {
namespace {


std::string step_ms(const Breakdown& b) { return fmt::format("{:.1f} ms", b.step_ns * 1e-6); }

}  // namespace

std::vector<Advice> advise(const Breakdown& b, const AdviceContext& c) {
  std::vector<Advice> out;
  const TrainingPlan& p = c.plan;
  const double wait = b.share_of(Phase::kDataWait);
  const double wait_threshold = p.workers == 0 ? kInlineDataWaitThreshold : kDataWaitThreshold;
  if (wait > wait_threshold) {
    const std::string evidence = fmt::format(
        "data wait is {} of the {} step (threshold {}{}): the training thread waits for batches",
        percent(wait), step_ms(b), percent(wait_threshold),
        p.workers == 0 ? ", batches made in the training thread" : "");
    if (p.workers < c.usable_cores)
      out.push_back({"data-wait",
                     fmt::format("make batches ahead in {} loader thread(s)", p.workers + 1),
                     evidence, "workers", std::to_string(p.workers + 1), false, wait});
    else if (p.workers > 0 && p.prefetch < 8)
      out.push_back({"data-wait", "let each loader thread prepare more batches ahead", evidence,
                     "prefetch", std::to_string(p.prefetch * 2), false, wait});
    if (c.uint8_data && p.transfer == Transfer::kFloat32)
      out.push_back({"data-wait",
                     "hand the step 8-bit images and normalise after the copy (less loader work)",
                     evidence, "transfer", "uint8", false, wait * 0.9});
  }
  const double copy = b.share_of(Phase::kCopy);
  if (copy > kCopyThreshold) {
    const std::string evidence = fmt::format("the copy to the device is {} of the step (threshold {})",
                                             percent(copy), percent(kCopyThreshold));
    if (c.cuda && !p.pin_memory)
      out.push_back({"copy", "make batches in pinned memory", evidence, "pin_memory", "on", false,
                     copy});
    else if (c.cuda && !p.non_blocking)
      out.push_back({"copy", "copy without waiting (overlaps with compute from pinned memory)",
                     evidence, "non_blocking", "on", false, copy});
    if (c.uint8_data && p.transfer == Transfer::kFloat32)
      out.push_back({"copy", "copy 8-bit images (4x fewer bytes) and normalise after the copy",
                     evidence, "transfer", "uint8", false, copy * 0.95});
  }
  const double compute = b.utilisation;
  if (p.amp == Amp::kOff && c.reduced_precision_hardware)
    out.push_back({"reduced-precision",
                   "train with automatic mixed precision (bf16 needs no gradient scaler)",
                   "no reduced precision is used, but " + c.reduced_precision_evidence +
                       fmt::format("; compute is {} of the step", percent(compute)),
                   "amp", c.cuda ? "fp16" : "bf16", true, compute});
  const double memory = b.memory_fraction();
  if (memory > kMemoryHighThreshold)
    out.push_back({"memory",
                   p.amp == Amp::kOff
                       ? "use mixed precision to halve activation memory, or activation checkpointing"
                       : "use activation checkpointing (recompute activations in backward)",
                   fmt::format("peak memory is {} of the {:.1f} GiB available (threshold {})",
                               percent(memory), b.memory_capacity_bytes / 1073741824.0,
                               percent(kMemoryHighThreshold)),
                   p.amp == Amp::kOff && c.reduced_precision_hardware ? "amp" : "",
                   p.amp == Amp::kOff && c.reduced_precision_hardware ? (c.cuda ? "fp16" : "bf16") : "",
                   true, memory});
  const bool room = memory >= 0 && memory < kMemoryLowThreshold;
  if (room && compute < kUtilisationThreshold)
    out.push_back({"utilisation", fmt::format("double the batch to {}", p.batch * 2),
                   fmt::format("compute is {} of the step (threshold {}) and peak memory {} of "
                               "capacity: per-step overheads are paid per batch",
                               percent(compute), percent(kUtilisationThreshold), percent(memory)),
                   "batch", std::to_string(p.batch * 2), true, 1.0 - compute});
  const double optimizer = b.share_of(Phase::kOptimizer);
  if (!p.set_to_none && optimizer > kOptimizerThreshold)
    out.push_back({"optimizer", "free gradients instead of zeroing them (zero_grad set_to_none)",
                   fmt::format("the optimizer phase is {} of the step (threshold {})",
                               percent(optimizer), percent(kOptimizerThreshold)),
                   "zero_grad", "set_to_none", false, optimizer});
  if (c.convolutional && !p.channels_last && compute > 0.5)
    out.push_back({"compute", "use channels_last memory format for the convolutions",
                   fmt::format("compute is {} of the step and the model is convolutional",
                               percent(compute)),
                   "format", "channels_last", false, compute * 0.5});
  if (p.threads < c.usable_cores && compute > 0.5)
    out.push_back({"compute",
                   fmt::format("give the step {} intra-op threads", c.usable_cores),
                   fmt::format("compute is {} of the step on {} of {} cores", percent(compute),
                               p.threads, c.usable_cores),
                   "threads", std::to_string(c.usable_cores), false, compute * 0.6});
  // Measured on ResNet-18 (docs/methodology.md): the same architecture trains ~13% slower as
  // TorchScript than eagerly, and as fast once the executor runs the graph op by op. On the CPU
  // LibTorch does not fuse by default, so the profiling executor's differentiable subgraphs cost
  // bookkeeping and buy nothing.
  if (c.torchscript && !c.cuda && p.optimized_executor && compute > 0.5)
    out.push_back({"executor",
                   "run the TorchScript graph op by op in training (torch.jit.optimized_execution(False))",
                   fmt::format("compute is {} of the step and the model is TorchScript on the CPU, "
                               "where LibTorch does not fuse: the profiling executor's "
                               "differentiable subgraphs add work and fuse nothing",
                               percent(compute)),
                   "executor", "plain", false, compute * 0.3});
  std::stable_sort(out.begin(), out.end(),
                   [](const Advice& a, const Advice& b) { return a.weight > b.weight; });
  return out;
}

}  // namespace torchperf

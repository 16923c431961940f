#include "torchperf/train/advice.h"

#include <algorithm>

#include <fmt/format.h>
#include "torchperf/page/text_table.h"

namespace torchperf {
namespace {


std::string step_ms(const Breakdown& b) { return fmt::format("{:.1f} ms", b.step_ns * 1e-6); }

// The peak at k times the batch: the activations grow with it (checkpointed: the blocks'
// inputs, and one block recomputed with its gradients, as the Python step measures them), the
// rest (weights, gradients, optimizer state, the runtime) does not.
double predicted_peak(const Breakdown& b, double k, bool checkpointed) {
  const double activations = static_cast<double>(b.activation_bytes);
  const double rest = static_cast<double>(b.peak_memory_bytes) - activations;
  return rest + k * static_cast<double>(checkpointed ? b.checkpointed_activation_bytes
                                                     : b.activation_bytes);
}

// DDP: the all-reduce backward could not hide, a rank that lags, a graph walked for nothing.
void advise_ranks(const Breakdown& b, const AdviceContext& c, std::vector<Advice>& out) {
  if (c.world_size < 2) return;
  const TrainingPlan& p = c.plan;
  const double exposed = b.share_of(Phase::kAllReduce);
  if (exposed > kAllReduceThreshold) {
    const std::string evidence = fmt::format(
        "the all-reduce that backward waited for is {} of the {} step (threshold {}), over {} "
        "ranks",
        percent(exposed), step_ms(b), percent(kAllReduceThreshold), c.world_size);
    if (p.accumulate > 1 && !p.no_sync && !p.ddp.static_graph)
      out.push_back({"all-reduce",
                     fmt::format("all-reduce once per optimizer step: the first {} of {} "
                                 "micro-batches under DDP's no_sync()",
                                 p.accumulate - 1, p.accumulate),
                     evidence, "no_sync", "on", false,
                     exposed * static_cast<double>(p.accumulate - 1) / p.accumulate});
    if (!p.ddp.gradient_as_bucket_view)
      out.push_back({"all-reduce", "let gradients be views into DDP's buckets (no copy into them)",
                     evidence, "gradient_as_bucket_view", "on", false, exposed * 0.3});
    // Larger buckets: fewer, larger all-reduces; smaller: the first starts sooner in backward.
    out.push_back({"all-reduce", "larger DDP buckets (fewer all-reduce calls)", evidence,
                   "ddp_bucket_mb", std::to_string(p.ddp.bucket_mb * 4), false, exposed * 0.25});
    if (p.ddp.bucket_mb >= 2)
      out.push_back({"all-reduce", "smaller DDP buckets (the first all-reduce starts sooner)",
                     evidence, "ddp_bucket_mb", std::to_string(std::max(1LL, p.ddp.bucket_mb / 5)),
                     false, exposed * 0.2});
    if (!p.ddp.static_graph && !(p.no_sync && p.accumulate > 1))
      out.push_back({"all-reduce", "tell DDP the graph is static (buckets ordered once)", evidence,
                     "static_graph", "on", false, exposed * 0.15});
  }
  if (b.unused_parameters == 0 && p.ddp.find_unused_parameters == "on")
    out.push_back({"all-reduce",
                   "stop searching for unused parameters (find_unused_parameters=auto)",
                   "every parameter gets a gradient, and find_unused_parameters=on walks the "
                   "graph each step",
                   "find_unused_parameters", "auto", false, 0.05});
  if (b.step_ns > 0 && b.straggler_gap_ns / b.step_ns > kStragglerThreshold) {
    const RankBreakdown* slowest = &b.ranks.front();
    for (const auto& r : b.ranks)
      if (r.busy_ns > slowest->busy_ns) slowest = &r;
    out.push_back({"straggler",
                   "balance the ranks: the others wait for the slowest at every all-reduce (its "
                   "data, its cores, its node's load)",
                   fmt::format("rank {}'s own work is {:.1f} ms longer than the median rank's, {} "
                               "of the step (threshold {})",
                               slowest->rank, b.straggler_gap_ns * 1e-6,
                               percent(b.straggler_gap_ns / b.step_ns),
                               percent(kStragglerThreshold)),
                   "", "", false, b.straggler_gap_ns / b.step_ns});
  }
}

// Loader threads from the next count up, doubling, to the usable cores: 1, 2, 4, … 16.
std::vector<std::string> worker_counts(int from, int cores) {
  std::vector<std::string> out;
  for (int n = std::max(1, from * 2); ; n *= 2) {
    const int count = std::min(n, cores);
    if (count <= from) break;
    out.push_back(std::to_string(count));
    if (count == cores) break;
  }
  return out;
}

// The training thread waits for batches: loader threads, prefetch, 8-bit transfer.
void advise_data_wait(const Breakdown& b, const AdviceContext& c, std::vector<Advice>& out) {
  const TrainingPlan& p = c.plan;
  const double wait = b.share_of(Phase::kDataWait);
  const double wait_threshold = p.workers == 0 ? kInlineDataWaitThreshold : kDataWaitThreshold;
  if (wait > wait_threshold) {
    const std::string evidence = fmt::format(
        "data wait is {} of the {} step (threshold {}{}): the training thread waits for batches",
        percent(wait), step_ms(b), percent(wait_threshold),
        p.workers == 0 ? ", batches made in the training thread" : "");
    const std::vector<std::string> counts = worker_counts(p.workers, c.usable_cores);
    if (!counts.empty()) {
      Advice a{"data-wait",
               fmt::format("make batches ahead in loader threads ({} … {}, sized to the {} usable "
                           "cores)",
                           counts.front(), counts.back(), c.usable_cores),
               evidence, "workers", counts.front(), false, wait};
      a.larger.assign(counts.begin() + 1, counts.end());
      out.push_back(a);
    }
    if (p.workers > 0 && p.prefetch < 8)
      out.push_back({"data-wait", "let each loader thread prepare more batches ahead", evidence,
                     "prefetch", std::to_string(p.prefetch * 2), false,
                     counts.empty() ? wait : wait * 0.5});
    if (c.uint8_data && p.transfer == Transfer::kFloat32)
      out.push_back({"data-wait",
                     "hand the step 8-bit images and normalise after the copy (less loader work)",
                     evidence, "transfer", "uint8", false, wait * 0.9});
  }
}

// The copy to the device: pinned memory without waiting, 8-bit images.
void advise_copy(const Breakdown& b, const AdviceContext& c, std::vector<Advice>& out) {
  const TrainingPlan& p = c.plan;
  const double copy = b.share_of(Phase::kCopy);
  if (copy > kCopyThreshold) {
    const std::string evidence = fmt::format("the copy to the device is {} of the step (threshold {})",
                                             percent(copy), percent(kCopyThreshold));
    // Pinned memory makes the copy asynchronous only when it is not waited for, and a copy not
    // waited for from pageable memory is still synchronous: the two are tried together.
    if (c.cuda && !(p.pin_memory && p.non_blocking)) {
      Advice a{"copy",
               "make batches in pinned memory and copy them without waiting (the copy overlaps "
               "with compute)",
               evidence, "pin_memory", "on", false, copy};
      a.with = {{"non_blocking", "on"}};
      out.push_back(a);
    }
    if (c.uint8_data && p.transfer == Transfer::kFloat32)
      out.push_back({"copy", "copy 8-bit images (4x fewer bytes) and normalise after the copy",
                     evidence, "transfer", "uint8", false, copy * 0.95});
  }
}

// Reduced precision where the hardware has it; memory near its capacity; room for a larger batch.
void advise_precision_and_memory(const Breakdown& b, const AdviceContext& c, std::vector<Advice>& out) {
  const TrainingPlan& p = c.plan;
  const double compute = b.utilisation;
  if (p.amp == Amp::kOff && c.reduced_precision_hardware)
    out.push_back({"reduced-precision",
                   "train with automatic mixed precision (bf16 needs no gradient scaler)",
                   "no reduced precision is used, but " + c.reduced_precision_evidence +
                       fmt::format("; compute is {} of the step", percent(compute)),
                   "amp", c.bf16 || !c.cuda ? "bf16" : "fp16", true, compute});
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
                   p.amp == Amp::kOff && c.reduced_precision_hardware
                       ? (c.bf16 || !c.cuda ? "bf16" : "fp16")
                       : "",
                   true, memory});
  // With the activations measured (--memory-cap), a batch's peak is predicted from them: only
  // they grow with the batch. Without, all of the peak is taken to grow, from half the capacity.
  const bool measured = b.activation_bytes > 0 && b.peak_memory_bytes > 0 &&
                        b.memory_capacity_bytes > 0;
  const double limit = kMemoryHighThreshold * static_cast<double>(b.memory_capacity_bytes);
  const bool room = measured || (memory >= 0 && memory < kMemoryLowThreshold);
  if (room && compute < kUtilisationThreshold) {
    // Larger batches while their memory stays under the high-water threshold: 2x, 4x, … of the
    // batch. A batch that would not fit is not tried.
    std::vector<std::string> sizes;
    for (long long k = 2; k <= 64; k *= 2) {
      const bool fits = measured ? predicted_peak(b, k, false) <= limit
                                 : memory * static_cast<double>(k) < kMemoryHighThreshold;
      if (!fits) break;
      sizes.push_back(std::to_string(p.batch * k));
    }
    if (!sizes.empty()) {
      Advice a{"utilisation",
               fmt::format("a larger batch ({} … {}; the memory it needs grows with it)",
                           sizes.front(), sizes.back()),
               fmt::format("compute is {} of the step (threshold {}) and peak memory {} of "
                           "capacity: per-step overheads are paid per batch",
                           percent(compute), percent(kUtilisationThreshold), percent(memory)),
               "batch", sizes.front(), true, 1.0 - compute};
      a.larger.assign(sizes.begin() + 1, sizes.end());
      out.push_back(a);
    }
  }
  // Capped by memory (the cap measured against the activations): checkpointing the repeated
  // blocks keeps their inputs only, and the larger batch it lets fit is tried with it, kept only
  // if samples/s wins. Tried whatever the compute share: on the share alone a larger batch's
  // better kernels do not show, and a user who sets a cap asks what it costs.
  if (measured && p.checkpoint == "off" && b.checkpointed_activation_bytes > 0 &&
      c.python_definition && predicted_peak(b, 2, false) > limit) {
    std::vector<std::string> checkpointed;
    for (long long k = 2; k <= 64; k *= 2)
      if (predicted_peak(b, k, true) <= limit) checkpointed.push_back(std::to_string(p.batch * k));
    if (!checkpointed.empty()) {
      Advice a{"memory",
               fmt::format("checkpoint the repeated blocks to fit a larger batch ({} … {})",
                           checkpointed.front(), checkpointed.back()),
               fmt::format("batch {} would need about {:.2f} GiB, over {} of the {:.2f} GiB cap "
                           "(not tried); checkpointed, a forward keeps {:.0f}% of its activations",
                           p.batch * 2, predicted_peak(b, 2, false) / 1073741824.0,
                           percent(kMemoryHighThreshold), b.memory_capacity_bytes / 1073741824.0,
                           100.0 * b.checkpointed_activation_bytes / b.activation_bytes),
               // Weighed as the memory rule is: by how full memory is (the cap binds).
               "batch", checkpointed.front(), true, memory};
      a.larger.assign(checkpointed.begin() + 1, checkpointed.end());
      a.with = {{"checkpoint", "blocks"}};
      if (!p.in_python()) a.with.push_back({"step", "eager"});  // checkpointing is Python's
      out.push_back(a);
    }
  }
}

// Compute: the optimizer phase, the memory format, threads.
void advise_compute(const Breakdown& b, const AdviceContext& c, std::vector<Advice>& out) {
  const TrainingPlan& p = c.plan;
  const double compute = b.utilisation;
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
}

// The guide's last step, torch.compile, and its CUDA-graph modes.
void advise_compile(const Breakdown& b, const AdviceContext& c, std::vector<Advice>& out) {
  const TrainingPlan& p = c.plan;
  const double compute = b.utilisation;
  // The guide's last step: torch.compile fuses the elementwise work of forward and backward. It
  // needs the model's Python definition; the step then runs in a Python worker.
  const std::string compile = compile_modes().front().graph;  // torch.compile's default mode
  if (c.python_definition && !p.compiled() && compute > 0.3) {
    const std::string evidence =
        fmt::format("compute is {} of the step, run op by op", percent(compute));
    out.push_back({"compile", "compile the model with torch.compile (the step runs in Python)",
                   evidence, "step", compile, false, compute * 0.5});
    // The guide's recipe interacts: the compiled step gains most from the layout and precision
    // it fuses (on a CPU with AMX, compile alone measured slower than eager, and compile with
    // channels_last and bf16 faster). The bundles are tried after compile alone.
    std::vector<std::pair<std::string, std::string>> with;
    if (c.convolutional && !p.channels_last) {
      with.push_back({"format", "channels_last"});
      Advice a{"compile",
               "compile the model with torch.compile in channels_last (the layout it fuses)",
               evidence, "step", compile, false, compute * 0.45};
      a.with = with;
      out.push_back(a);
    }
    if (p.amp == Amp::kOff && c.reduced_precision_hardware) {
      with.push_back({"amp", c.bf16 || !c.cuda ? "bf16" : "fp16"});
      Advice a{"compile",
               "compile the model with torch.compile under mixed precision" +
                   std::string(with.size() > 1 ? ", in channels_last" : ""),
               evidence + "; " + c.reduced_precision_evidence, "step", compile, true,
               compute * 0.4};
      a.with = with;
      out.push_back(a);
    }
  }
  // From the default mode on CUDA, the modes that replay the step as CUDA graphs.
  const CompileMode* mode = p.compiled() ? compile_mode(p.step) : nullptr;
  if (c.cuda && mode && !mode->cuda_graphs && !mode->autotunes && compute > 0.3)
    for (const CompileMode& m : compile_modes()) {
      if (!m.trains || !m.cuda_graphs) continue;
      if (m.autotunes)
        out.push_back({"compile",
                       fmt::format("benchmark kernel choices while compiling (torch.compile mode "
                                   "{})", m.mode),
                       fmt::format("compute is {} of the step", percent(compute)), "step", m.graph,
                       false, compute * 0.2});
      else
        out.push_back({"compile",
                       fmt::format("replay the compiled step as CUDA graphs (torch.compile mode "
                                   "{})", m.mode),
                       fmt::format("compute is {} of the step: each kernel launch costs host time",
                                   percent(compute)),
                       "step", m.graph, false, compute * 0.4});
    }
}

// TorchScript's executor in training on the CPU.
void advise_executor(const Breakdown& b, const AdviceContext& c, std::vector<Advice>& out) {
  const TrainingPlan& p = c.plan;
  const double compute = b.utilisation;
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
}

}  // namespace

std::vector<Advice> advise(const Breakdown& b, const AdviceContext& c) {
  std::vector<Advice> out;
  advise_data_wait(b, c, out);
  advise_copy(b, c, out);
  advise_precision_and_memory(b, c, out);
  advise_compute(b, c, out);
  advise_compile(b, c, out);
  advise_executor(b, c, out);
  advise_ranks(b, c, out);
  std::stable_sort(out.begin(), out.end(),
                   [](const Advice& a, const Advice& b) { return a.weight > b.weight; });
  return out;
}

}  // namespace torchperf

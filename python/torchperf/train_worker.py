"""The training step in Python (`train`, step=eager | compile | compile-reduce-overhead |
compile-max-autotune): one side of the ladder, driven by the C++ side.

    python -m torchperf.train_worker
    python -m torchperf.train_worker --describe python:MODULE:CALLABLE

--describe builds the model and answers, as one JSON line, what `train` decides its knobs on
(whether it has 2-D convolutions, its trainable parameters); a model that cannot be built exits
with the Python side's BAD_SOURCE code and its reason.

The protocol is the Python runtime's (torchperf.worker: one JSON request a line on stdin, one
answer a line on file descriptor 3, errors answered with the C++ worker's kinds). The step is the
C++ TrainingSession's, written as a PyTorch user writes it: next batch from a DataLoader, the copy
(uint8 batches normalised after it), forward and loss under autocast, loss.item(), backward
(through a GradScaler with fp16), the optimizer's step, zero_grad.

Jobs (protocol version 1, docs/worker-protocol.md):
  python-train-side
            build the model, the optimizer and the loader, run the warm-up steps (the first of
            which compiles under torch.compile) and answer the compile and set-up times.
  breakdown {"steps": N}: N steps with the device synchronised at every phase boundary; answer
            each step's phase times, the peak memory and the device's capacity.
  block     one block: settle steps, then timed steps synchronised only at their end; samples/s.
  finish    nothing more to run.
"""

import math
import sys
import time

from torchperf import compile_modes
from torchperf import worker
from torchperf.error_kinds import ErrorKind
from torchperf.worker import JobError, concise

PYTHON_TRAIN_SIDE_REQUEST = {
    "model": str, "data_source": str, "image_size": int, "loss": str, "optimizer": str,
    "learning_rate": float, "device": str, "grad_scaler": str, "step": str, "threads": int,
    "batch": int, "channels_last": bool, "cudnn_benchmark": bool, "workers": int,
    "prefetch": int, "pin_memory": bool, "non_blocking": bool, "transfer": str, "amp": str,
    "set_to_none": bool, "warmup_steps": int, "steps": int, "settle_steps": int,
    "accumulate": int, "no_sync": bool, "checkpoint": str, "memory_cap_bytes": int,
    "bucket_mb": int, "gradient_as_bucket_view": bool, "static_graph": bool,
    "broadcast_buffers": bool, "find_unused_parameters": str, "nproc": int, "nnodes": int,
    "node_rank": int, "rdzv_endpoint": str, "collective_timeout_s": float,
    "join_timeout_s": float, "rank_log_dir": str}
BREAKDOWN_REQUEST = {"steps": int}

# The C++ side's Phase order: data wait, copy, forward, backward, optimizer, other, and the
# all-reduce that DDP's backward waited for (measured apart: see TrainSide.breakdown).
DATA_WAIT, COPY, FORWARD, BACKWARD, OPTIMIZER, OTHER, ALL_REDUCE = range(7)
PHASES = 7
# Backward passes under no_sync, after a breakdown's steps, that time backward without its
# all-reduce (the rest of a synchronised backward is the all-reduce it waited for).
PROBE_STEPS = 3

COMPILE_MODES = compile_modes.TRAINING  # the step's modes, from the one table


def build_model(reference):
    """builtin:NAME (its Python definition, the weights of seed 0 as the C++ side's copy has) or
    python:MODULE:CALLABLE (the user's own), in training mode."""
    if reference.startswith("builtin:"):
        from torchperf import builtin_models

        try:
            return builtin_models.build(reference.split(":", 1)[1], 0).train()
        except KeyError as e:
            raise JobError(ErrorKind.USAGE, str(e).strip("'\""))
    if reference.startswith("python:"):
        from torchperf import export_source

        source = reference.split(":", 1)[1]
        try:
            return export_source.build_model(source, export_source.load_callable(source)).train()
        except SystemExit as e:
            raise JobError(ErrorKind.MODEL, f"--from-python '{source}' could not be loaded (exit {e.code})")
    raise JobError(ErrorKind.USAGE, f"model '{reference}': the Python training step trains builtin:NAME "
                            "or python:MODULE:CALLABLE")


def batches(loader, sampler=None):
    epoch = 0
    while True:  # epoch after epoch, as the C++ BatchLoader does
        if sampler is not None:
            sampler.set_epoch(epoch)  # DistributedSampler: each epoch its own shuffle
        yield from loader
        epoch += 1


def check_output(out, targets, cross_entropy):
    """The model's output against the data's targets, said as the C++ trainer says it: PyTorch's
    own text for a wrong target is a broadcast error or a warning (issue 63)."""
    size = lambda t: "[" + ", ".join(map(str, t.shape)) + "]"
    if cross_entropy:
        if out.dim() != 2 or out.shape[0] != targets.shape[0]:
            raise JobError(ErrorKind.WORKLOAD,
                           f"the model's output {size(out)} does not fit cross-entropy with "
                           f"targets {size(targets)}: expected [{targets.shape[0]}, C]")
    elif out.shape != targets.shape:
        raise JobError(ErrorKind.WORKLOAD,
                       f"the model's output {size(out)} does not fit mse with targets "
                       f"{size(targets)}: expected the same shape")


class Ranks:
    """This process's place among DDP ranks (torchperf.rank_group sets it up): its rank, the world
    size, its rank on this node, and the process group DDP reduces in (None: the default)."""

    def __init__(self, rank=0, world_size=1, local_rank=0, group=None):
        self.rank, self.world_size, self.local_rank, self.group = rank, world_size, local_rank, group


def unused_parameters(model, inputs, targets, loss_of):
    """Parameters that one forward and backward leave without a gradient (DDP then needs
    find_unused_parameters); gradients are cleared after."""
    loss_of(model(inputs), targets).backward()
    unused = sum(1 for p in model.parameters() if p.requires_grad and p.grad is None)
    model.zero_grad(set_to_none=True)
    return unused


class TrainSide:
    def __init__(self, request, ranks=None):
        import torch
        from torch.utils.data import DataLoader

        started = time.perf_counter()
        s = worker.fields(request, PYTHON_TRAIN_SIDE_REQUEST)
        self.s = s
        self.ranks = ranks or Ranks()
        if s["accumulate"] < 1:
            raise JobError(ErrorKind.CONFIG, f"accumulate={s['accumulate']}: expected at least 1")
        if s["step"] != "eager" and s["step"] not in COMPILE_MODES:
            raise JobError(ErrorKind.CONFIG, f"step '{s['step']}': expected eager or one of "
                                     f"{', '.join(COMPILE_MODES)}")
        try:
            self.device = torch.device(s["device"])
        except RuntimeError as e:
            raise JobError(ErrorKind.CONFIG, f"device '{s['device']}': {concise(e)}")
        if self.device.type == "cuda" and self.ranks.world_size > 1:
            self.device = torch.device("cuda", self.ranks.local_rank)  # a GPU per rank
            torch.cuda.set_device(self.device)
        torch.set_num_threads(max(1, s["threads"]))  # once, before anything runs
        if self.device.type == "cuda":
            torch.backends.cudnn.benchmark = s["cudnn_benchmark"]
        from torchperf import training_data

        self.normalise = training_data.normalise_after_copy
        try:
            dataset = training_data.open_dataset(s["data_source"], s["image_size"],
                                                 s["transfer"] == "uint8")
        except (ValueError, OSError, RuntimeError) as e:
            raise JobError(ErrorKind.USAGE, concise(e) if not isinstance(e, ValueError) else str(e))
        extra = ({"prefetch_factor": s["prefetch"], "persistent_workers": True}
                 if s["workers"] > 0 else {})
        sampler = None
        if self.ranks.world_size > 1:
            from torch.utils.data.distributed import DistributedSampler

            # Each rank its own share of every epoch, as DDP training reads data.
            sampler = DistributedSampler(dataset, num_replicas=self.ranks.world_size,
                                         rank=self.ranks.rank, shuffle=True, drop_last=True)
        loader = DataLoader(dataset, batch_size=s["batch"], shuffle=sampler is None,
                            sampler=sampler, num_workers=s["workers"], drop_last=True,
                            pin_memory=s["pin_memory"] and self.device.type == "cuda", **extra)
        self.batches = batches(loader, sampler)
        if self.device.type == "cuda" and s["memory_cap_bytes"] > 0:
            total = torch.cuda.get_device_properties(self.device).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, s["memory_cap_bytes"] / total),
                                                       self.device)

        self.compiled = s["step"] in COMPILE_MODES
        model = build_model(s["model"]).to(self.device)
        if s["channels_last"]:
            model = model.to(memory_format=torch.channels_last)
        params = [p for p in model.parameters() if p.requires_grad]
        if not params:
            raise JobError(ErrorKind.MODEL, f"{s['model']}: no trainable parameters")
        self.cross_entropy = s["loss"] == "cross-entropy"
        self.activation_bytes = self.checkpointed_activation_bytes = -1
        if s["memory_cap_bytes"] > 0:
            # What a forward keeps for backward, as is and with every block recomputed: the C++
            # ladder sizes the batches it tries under the cap from these.
            from torchperf import checkpointing

            # Measured on two samples and scaled to the batch: a forward of the whole batch
            # without checkpointing would itself pass the cap a checkpointed batch is sized to.
            probe, _ = self.next_batch()
            sub = min(2, probe.shape[0])
            scale = s["batch"] / sub
            # A copy: a slice's storage is the whole batch's, which a layer that keeps its input
            # would count, scaled by the batch again (2248 MiB for a model that keeps 202).
            probe = probe[:sub].clone()
            plain = checkpointing.saved_activation_bytes(model, probe, "off")
            checkpointed = checkpointing.checkpointed_peak_bytes(model, probe, plain)
            self.checkpointed_activation_bytes = round(checkpointed * scale) if checkpointed > 0 else -1
            plain = round(plain * scale)
            self.activation_bytes = plain if s["checkpoint"] == "off" else \
                self.checkpointed_activation_bytes
        self.checkpointed_blocks = 0
        if s["checkpoint"] != "off":
            from torchperf import checkpointing

            self.checkpointed_blocks = checkpointing.apply(model, s["checkpoint"], self.compiled)
        self.unused_parameters = 0
        self.ddp = None
        if self.ranks.world_size > 1:
            model = self.wrap_ddp(model)
        lr = s["learning_rate"]
        self.optimizer = (torch.optim.Adam(params, lr=lr) if s["optimizer"] == "adam"
                          else torch.optim.SGD(params, lr=lr, momentum=0.9))
        self.scaler = None
        if s["grad_scaler"] == "on" or (s["grad_scaler"] == "auto" and s["amp"] == "fp16"):
            self.scaler = torch.amp.GradScaler(self.device.type)
        self.amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(s["amp"])
        self.mark_step = None
        if self.compiled:
            import torch._dynamo

            torch._dynamo.reset()
            # Compiled after DDP wraps it: dynamo's DDP optimizer splits the graph at the buckets.
            model = torch.compile(model, mode=COMPILE_MODES[s["step"]])
            if s["step"] == "compile-reduce-overhead":
                # CUDA graphs reuse their output buffers: each step begins a new generation.
                self.mark_step = torch.compiler.cudagraph_mark_step_begin
        self.model = model
        self.steps_done = 0
        self.compile_s = -1.0
        first = time.perf_counter()
        try:
            for i in range(s["warmup_steps"]):
                self.step(False)
                if i == 0 and self.compiled:
                    # torch.compile compiles forward and backward on the first step.
                    self.compile_s = time.perf_counter() - first
        except JobError:
            raise
        except Exception as e:
            self.raise_step_error(e)
        self.setup_ms = (time.perf_counter() - started) * 1e3

    def loss_of(self, out, targets):
        import torch.nn.functional as F

        out = out.float()
        if not getattr(self, "checked_output", False):
            check_output(out, targets, self.cross_entropy)
            self.checked_output = True
        return F.cross_entropy(out, targets) if self.cross_entropy else F.mse_loss(out, targets)

    def next_batch(self):
        import torch

        inputs, targets = next(self.batches)
        inputs = inputs.to(self.device)
        if inputs.dtype == torch.uint8:
            inputs = self.normalise(inputs)
        return inputs, targets.to(self.device)

    def wrap_ddp(self, model):
        """DistributedDataParallel with the DDP knobs; find_unused_parameters=auto turns it on
        only where a forward and backward leave parameters without a gradient."""
        from torch.nn.parallel import DistributedDataParallel as DDP

        s = self.s
        find_unused = s["find_unused_parameters"]
        if find_unused not in ("auto", "on", "off"):
            raise JobError(ErrorKind.CONFIG, f"find_unused_parameters '{find_unused}': expected "
                                             "auto, on or off")
        if s["static_graph"] and s["no_sync"] and s["accumulate"] > 1:
            raise JobError(ErrorKind.CONFIG, "static_graph=on with no_sync=on: DDP's static graph "
                                             "does not take steps whose all-reduce is skipped "
                                             "(its reducer asserts); choose one")
        inputs, targets = self.next_batch()
        self.unused_parameters = unused_parameters(model, inputs, targets, self.loss_of)
        if find_unused == "off" and self.unused_parameters:
            raise JobError(ErrorKind.CONFIG, f"find_unused_parameters=off: {self.unused_parameters} "
                                             "parameters get no gradient in a step, and DDP waits "
                                             "for them; use auto or on")
        on = find_unused == "on" or (find_unused == "auto" and self.unused_parameters > 0)
        cuda = self.device.type == "cuda"
        self.ddp = DDP(model, device_ids=[self.device.index] if cuda else None,
                       process_group=self.ranks.group, bucket_cap_mb=s["bucket_mb"],
                       gradient_as_bucket_view=s["gradient_as_bucket_view"],
                       static_graph=s["static_graph"], broadcast_buffers=s["broadcast_buffers"],
                       find_unused_parameters=on)
        return self.ddp

    def check_memory_cap(self):
        cap = self.s["memory_cap_bytes"]
        if cap <= 0 or self.device.type == "cuda":  # CUDA: the allocator's own fraction
            return
        peak = worker.resident_high_water_bytes()
        if peak > cap:
            who = f"rank {self.ranks.rank}" if self.ranks.world_size > 1 else "the step"
            raise JobError(ErrorKind.RESOURCE_LIMIT,
                           f"out of memory: {who} reached {peak / 2**20:.0f} MiB resident, over "
                           f"--memory-cap {cap / 2**20:.0f} MiB (batch {self.s['batch']}, "
                           f"checkpoint={self.s['checkpoint']})")

    def raise_step_error(self, error):
        if isinstance(error, JobError):
            raise error
        if worker.is_out_of_memory(error):
            raise JobError(ErrorKind.RESOURCE_LIMIT, f"out of memory: {concise(error)}")
        if self.compiled:
            import torch._dynamo.exc as dynamo_exc

            if isinstance(error, (dynamo_exc.BackendCompilerFailed,
                                  dynamo_exc.InternalTorchDynamoError)):
                raise JobError(ErrorKind.COMPILE, f"torch.compile failed: {worker.compile_error_line(error)}")
        raise JobError(ErrorKind.WORKLOAD, f"the training step failed: {concise(error)}")

    def sync(self):
        import torch

        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def step(self, breakdown, probe=False):
        """One step: accumulate micro-batches, each forward and backward (the first K-1 under
        DDP's no_sync with no_sync on), then the optimizer. With breakdown, the device
        synchronised at each phase boundary. A probe is forward and backward under no_sync
        without the optimizer: backward's own time, its all-reduce left out."""
        import contextlib

        import torch

        s = self.s
        times = [0.0] * PHASES
        begin = mark = time.perf_counter_ns()

        def lap(phase):
            nonlocal mark
            if breakdown:
                self.sync()
            now = time.perf_counter_ns()
            times[phase] += now - mark
            mark = now
            return now

        count = s["accumulate"]
        samples, total, synced_backward_ns, synced = 0, None, 0.0, 0
        for micro in range(count):
            inputs, targets = next(self.batches)
            lap(DATA_WAIT)
            inputs = inputs.to(self.device, non_blocking=s["non_blocking"])
            targets = targets.to(self.device, non_blocking=s["non_blocking"])
            if inputs.dtype == torch.uint8:
                inputs = self.normalise(inputs)
            if s["channels_last"] and inputs.dim() == 4:
                inputs = inputs.contiguous(memory_format=torch.channels_last)
            lap(COPY)
            skip_sync = self.ddp is not None and (probe or (s["no_sync"] and micro < count - 1))
            with self.ddp.no_sync() if skip_sync else contextlib.nullcontext():
                if self.mark_step:
                    self.mark_step()
                if self.amp_dtype is None:
                    out = self.model(inputs)
                else:
                    with torch.autocast(self.device.type, dtype=self.amp_dtype):
                        out = self.model(inputs)
                loss = self.loss_of(out, targets)
                if count > 1:
                    loss = loss / count  # the mean over the optimizer step's samples
                lap(FORWARD)
                total = loss.detach() if total is None else total + loss.detach()
                value = None
                if micro == count - 1:
                    # Read once per optimizer step, as the C++ step does (a logging loop's sync).
                    value = total.item()
                    if not math.isfinite(value) and self.scaler is None:
                        raise JobError(ErrorKind.DIVERGED, f"the loss became {value} at step "
                                       f"{self.steps_done + 1} (with amp=fp16, or --grad-scaler on, "
                                       "the scaler skips such steps)")
                before = lap(OTHER)
                (self.scaler.scale(loss) if self.scaler else loss).backward()
                after = lap(BACKWARD)
                if self.ddp is not None and not skip_sync:
                    synced_backward_ns += after - before
                    synced += 1
            samples += int(inputs.shape[0])
        if probe:
            self.optimizer.zero_grad(set_to_none=s["set_to_none"])
            self.sync()
            return times[BACKWARD] / count
        stepped = True
        if self.scaler:
            scale = self.scaler.get_scale()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            stepped = self.scaler.get_scale() >= scale
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=s["set_to_none"])
        if not breakdown:
            self.sync()
        lap(OPTIMIZER)
        self.steps_done += 1
        self.check_memory_cap()
        # The step ends where its last phase does: the phases add up to it.
        return {"ns": times, "total_ns": float(mark - begin), "samples": samples, "loss": value,
                "stepped": stepped, "start_us": int(time.time() * 1e6),
                "synced_backward_ns": synced_backward_ns, "synced": synced}

    def ready(self):
        import torch

        return {"setup_ms": self.setup_ms, "compile_s": self.compile_s,
                "torch": torch.__version__, "threads": torch.get_num_threads(),
                "world_size": self.ranks.world_size, "unused_parameters": self.unused_parameters,
                "checkpointed_blocks": self.checkpointed_blocks,
                "activation_bytes": self.activation_bytes,
                "checkpointed_activation_bytes": self.checkpointed_activation_bytes,
                "followed": False}

    def breakdown(self, steps):
        """steps timed phase by phase. Under DDP, backward waits for the all-reduce of the
        gradients it has not overlapped: probe steps under no_sync then time backward alone, and
        what a synchronised backward took beyond that is its exposed all-reduce."""
        import torch

        cuda = self.device.type == "cuda"
        if cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            worker.reset_high_water()
        try:
            times = [self.step(True) for _ in range(steps)]
            if cuda:
                peak = torch.cuda.max_memory_allocated(self.device)
                capacity = torch.cuda.get_device_properties(self.device).total_memory
            else:
                peak, capacity = worker.resident_high_water_bytes(), -1  # the C++ side knows the limit
            if self.ddp is not None:
                alone = sorted(self.step(True, probe=True) for _ in range(PROBE_STEPS))[PROBE_STEPS // 2]
                for t in times:
                    exposed = max(0.0, t["synced_backward_ns"] - t["synced"] * alone)
                    t["ns"][BACKWARD] -= exposed
                    t["ns"][ALL_REDUCE] += exposed
        except JobError:
            raise
        except Exception as e:
            self.raise_step_error(e)
        for t in times:
            del t["synced_backward_ns"], t["synced"]
        return {"steps": times, "peak_memory_bytes": peak, "memory_capacity_bytes": capacity,
                "ranks": []}

    def block_times(self):
        """One block: settle steps, then timed steps; (their time in ns, their samples)."""
        s = self.s
        try:
            for _ in range(s["settle_steps"]):
                self.step(False)
            ns, samples = 0.0, 0
            for _ in range(s["steps"]):
                t = self.step(False)
                ns += t["total_ns"]
                samples += t["samples"]
        except JobError:
            raise
        except Exception as e:
            self.raise_step_error(e)
        return ns, samples

    def block(self):
        ns, samples = self.block_times()
        return {"samples_per_s": samples / (ns * 1e-9)}


def serve(lines, out):
    """The first request must be "python-train-side"; then breakdowns and blocks until
    "train-finish"."""

    def handle(side, job, request):
        if job == "train-block":
            return side.block()
        if job == "breakdown":
            return side.breakdown(worker.fields(request, BREAKDOWN_REQUEST)["steps"])
        if job == "train-finish":
            return {}
        raise JobError(ErrorKind.PROTOCOL, f"unknown training side job '{job}'")

    return worker.serve_side(lines, out, "python-train-side", "train-finish", TrainSide, handle)


def describe(reference):
    import torch

    from torchperf import _child

    if reference.startswith("python:"):
        from torchperf import export_source

        # Its own message and exit code when the module cannot be imported or the model built.
        source = reference.split(":", 1)[1]
        model = export_source.build_model(source, export_source.load_callable(source))
    else:
        try:
            model = build_model(reference)
        except JobError as e:
            _child.fail(_child.BAD_SOURCE, str(e))
    _child.answer(convolutional=any(isinstance(m, torch.nn.Conv2d) for m in model.modules()),
                  parameters=sum(p.numel() for p in model.parameters() if p.requires_grad))
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--describe":
        return describe(sys.argv[2])
    return worker.run(serve, "torchperf.train_worker")


if __name__ == "__main__":
    sys.exit(main())

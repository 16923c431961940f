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
    "set_to_none": bool, "warmup_steps": int, "steps": int, "settle_steps": int}
BREAKDOWN_REQUEST = {"steps": int}

# The C++ side's Phase order: data wait, copy, forward, backward, optimizer, other.
DATA_WAIT, COPY, FORWARD, BACKWARD, OPTIMIZER, OTHER = range(6)

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


def batches(loader):
    while True:  # epoch after epoch, as the C++ BatchLoader does
        yield from loader


class TrainSide:
    def __init__(self, request):
        import torch
        from torch.utils.data import DataLoader

        started = time.perf_counter()
        s = worker.fields(request, PYTHON_TRAIN_SIDE_REQUEST)
        self.s = s
        if s["step"] != "eager" and s["step"] not in COMPILE_MODES:
            raise JobError(ErrorKind.CONFIG, f"step '{s['step']}': expected eager or one of "
                                     f"{', '.join(COMPILE_MODES)}")
        try:
            self.device = torch.device(s["device"])
        except RuntimeError as e:
            raise JobError(ErrorKind.CONFIG, f"device '{s['device']}': {concise(e)}")
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
        loader = DataLoader(dataset, batch_size=s["batch"], shuffle=True,
                            num_workers=s["workers"], drop_last=True,
                            pin_memory=s["pin_memory"] and self.device.type == "cuda", **extra)
        self.batches = batches(loader)

        model = build_model(s["model"]).to(self.device)
        if s["channels_last"]:
            model = model.to(memory_format=torch.channels_last)
        params = [p for p in model.parameters() if p.requires_grad]
        if not params:
            raise JobError(ErrorKind.MODEL, f"{s['model']}: no trainable parameters")
        lr = s["learning_rate"]
        self.optimizer = (torch.optim.Adam(params, lr=lr) if s["optimizer"] == "adam"
                          else torch.optim.SGD(params, lr=lr, momentum=0.9))
        self.scaler = None
        if s["grad_scaler"] == "on" or (s["grad_scaler"] == "auto" and s["amp"] == "fp16"):
            self.scaler = torch.amp.GradScaler(self.device.type)
        self.amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(s["amp"])
        self.cross_entropy = s["loss"] == "cross-entropy"
        self.compiled = s["step"] in COMPILE_MODES
        self.mark_step = None
        if self.compiled:
            import torch._dynamo

            torch._dynamo.reset()
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

    def raise_step_error(self, error):
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

    def step(self, breakdown):
        """One step; with breakdown, the device synchronised at each phase boundary."""
        import torch
        import torch.nn.functional as F

        s = self.s
        times = [0.0] * 6
        begin = mark = time.perf_counter_ns()

        def lap(phase):
            nonlocal mark
            if breakdown:
                self.sync()
            now = time.perf_counter_ns()
            times[phase] += now - mark
            mark = now

        inputs, targets = next(self.batches)
        lap(DATA_WAIT)
        inputs = inputs.to(self.device, non_blocking=s["non_blocking"])
        targets = targets.to(self.device, non_blocking=s["non_blocking"])
        if inputs.dtype == torch.uint8:
            inputs = self.normalise(inputs)
        if s["channels_last"] and inputs.dim() == 4:
            inputs = inputs.contiguous(memory_format=torch.channels_last)
        lap(COPY)
        if self.mark_step:
            self.mark_step()
        with torch.autocast(self.device.type, dtype=self.amp_dtype or torch.bfloat16,
                            enabled=self.amp_dtype is not None):
            out = self.model(inputs)
        out = out.float()
        loss = F.cross_entropy(out, targets) if self.cross_entropy else F.mse_loss(out, targets)
        lap(FORWARD)
        value = loss.item()  # read every step, as the C++ step does (a logging loop's sync)
        if not math.isfinite(value) and self.scaler is None:
            raise JobError(ErrorKind.DIVERGED, f"the loss became {value} at step {self.steps_done + 1} "
                                       "(with amp=fp16, or --grad-scaler on, the scaler skips "
                                       "such steps)")
        lap(OTHER)
        (self.scaler.scale(loss) if self.scaler else loss).backward()
        lap(BACKWARD)
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
        # The step ends where its last phase does: the phases add up to it.
        return {"ns": times, "total_ns": float(mark - begin),
                "samples": int(inputs.shape[0]), "loss": value, "stepped": stepped,
                "start_us": int(time.time() * 1e6)}

    def ready(self):
        import torch

        return {"setup_ms": self.setup_ms, "compile_s": self.compile_s,
                "torch": torch.__version__, "threads": torch.get_num_threads()}

    def breakdown(self, steps):
        import torch

        cuda = self.device.type == "cuda"
        if cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            worker.reset_high_water()
        try:
            times = [self.step(True) for _ in range(steps)]
        except JobError:
            raise
        except Exception as e:
            self.raise_step_error(e)
        if cuda:
            peak = torch.cuda.max_memory_allocated(self.device)
            capacity = torch.cuda.get_device_properties(self.device).total_memory
        else:
            peak, capacity = worker.resident_high_water_bytes(), -1  # the C++ side knows the limit
        return {"steps": times, "peak_memory_bytes": peak, "memory_capacity_bytes": capacity}

    def block(self):
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

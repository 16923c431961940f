"""torchperf.bench and torchperf.tune: the CLI's commands for a module in hand.

The module is checked and exported here (torch.export, a .pt2 written beside the results); every
measurement runs in the C++ core's worker processes, as from the CLI, never in this process.
"""

import contextlib
import ctypes
import hashlib
import json
import os
import re
import shutil
import tempfile
import time

from torchperf import _child, _core, feed, runtimes
from torchperf.feed import checked_inputs, checked_model  # noqa: F401 (the API's checks)
from torchperf.error_kinds import ErrorKind
from torchperf.errors import TorchperfError
from torchperf.records import (BenchFigures, PointStatus, RecordError, TuneSummary,
                               configuration_key)

# The model as the caller's code runs it: eager PyTorch, autograd on, fp32, contiguous. The winner
# is measured head to head against it (tune --as-given), at the winner's batch.
AS_GIVEN = {"runtime": "python", "graph": "eager", "grad": "on", "precision": "fp32"}


class ForwardError(ValueError):
    """The model's forward raised on the example inputs."""


def eager_outputs(model, inputs):
    """The model's own outputs on the inputs (eval, no grad): the reference apply is judged
    against, and the check that its forward accepts them."""
    import torch

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            return model(*inputs)
    except Exception as e:
        first = (str(e).strip().splitlines() or [""])[0]
        raise ForwardError(f"the model's forward raised on example_inputs ({_child.describe_tensors(inputs)}): "
                           f"{type(e).__name__}: {first}") from e
    finally:
        model.train(was_training)


def fingerprint(model, inputs):
    """The model's identity in a journal's folder: its class, its weights and its inputs'
    signature. Another model (or the same one retrained) gives another."""
    import torch

    digest = hashlib.sha256()
    digest.update(f"{type(model).__module__}.{type(model).__qualname__}".encode())
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        t = tensor.detach().cpu().contiguous()
        digest.update(str((t.dtype, tuple(t.shape))).encode())
        if t.numel():
            # The bytes as they lie (a contiguous CPU copy): no numpy, which torch does not need.
            digest.update(ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()))
    digest.update(describe_signature(inputs).encode())
    return digest.hexdigest()[:16]


def describe_signature(inputs):
    return ", ".join(f"{str(t.dtype).replace('torch.', '')}[*,{','.join(map(str, t.shape[1:]))}]"
                     for t in inputs)


def looks_like_mask(t, varying):
    """Whether an integer input of an example batch is an attention mask: only 0 and 1, and along
    each varying dimension ones then zeros (right padding) or zeros then ones (left padding)."""
    if not varying or t.numel() == 0 or not bool(((t == 0) | (t == 1)).all()):
        return False
    for d in varying:
        steps = t.diff(dim=d)
        if not (bool((steps <= 0).all()) or bool((steps >= 0).all())):
            return False
    return True


def id_range(model, t):
    """Token ids' range [low, high): the smallest nn.Embedding table of the model that holds the
    example's largest id (a vocabulary: ids drawn from it are ids the model takes, issue 84: the
    example's own range, 41..30518, was what generated requests drew from), else the example's
    own range."""
    import torch

    top = int(t.max()) + 1
    tables = sorted(m.num_embeddings for m in (model.modules() if model is not None else ())
                    if isinstance(m, torch.nn.Embedding) and m.num_embeddings >= top)
    return (0, tables[0]) if tables else (int(t.min()), top)


def varying_dimensions(inputs, dims, model=None):
    """For dims ({"S": "lognormal:40:0.9:4..512"}, or {"S": (DISTRIBUTION, {input: dimension})}),
    the core's --input spec with those dimensions named and, per input, {dimension: (name, low,
    high)} for torch.export. A distribution alone names dimension 1 of every input that has one
    (token ids and their mask: [batch, length]). The core reads the distributions (feed.resolve):
    one that it refuses is a ValueError with its words."""
    import torch

    if not isinstance(dims, dict) or not dims:
        raise TypeError(f"dims: expected a dict of name -> distribution, got {dims!r}")
    where = [{} for _ in inputs]
    options = []
    for name, value in dims.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
            raise ValueError(f"dims: {name!r}: expected a name (a letter, then letters, digits "
                             "or '_')")
        text, at = value if isinstance(value, tuple) else (value, None)
        if not isinstance(text, str):
            raise TypeError(f"dims['{name}']: expected a distribution as --dim writes it "
                            f"('8..512', 'lognormal:40:0.9:4..512', 'file:lengths.txt'), got "
                            f"{type(text).__name__}")
        options.append(f"{name}={text}")
        if at is None:
            at = {i: 1 for i, t in enumerate(inputs) if t.dim() >= 2}
            if len(dims) > 1:
                raise ValueError(f"dims: {len(dims)} names: say where each lies, as "
                                 f"{{'{name}': ('{text}', {{0: 1}})}} (input 0, dimension 1)")
        for i, d in at.items():
            if not (0 <= i < len(inputs)) or not (1 <= d < inputs[i].dim()):
                raise ValueError(f"dims['{name}']: input {i} dimension {d}: expected an input "
                                 f"and a dimension after its batch ({_child.describe_tensors(inputs)})")
            if inputs[i].shape[d] <= 2:
                # torch.export specialises a size of 1 and takes one of 2 for the batch's.
                raise ValueError(f"dims['{name}']: input {i} dimension {d} is {inputs[i].shape[d]} "
                                 "in example_inputs: give an example at least 3 long there")
            where[i][d] = name
    parts = []
    for t, varying in zip(inputs, where):
        sizes = "x".join(varying.get(d, str(t.shape[d])) for d in range(1, t.dim()))
        dtype = str(t.dtype).replace("torch.", "")
        part = f"{dtype}:{sizes}"
        if not t.is_floating_point() and t.dtype != torch.bool and t.numel():
            # Token ids drawn within the example's range; a mask of ones stays ones (padding: 0).
            # A padded batch's mask (0/1, its zeros trailing) is a mask too, not ids of 0 and 1
            # drawn per token (issue 63).
            low, high = (1, 2) if looks_like_mask(t, varying) else id_range(model, t)
            part += f"@{low}..{high}"
        parts.append(part)
    spec = ";".join(parts)
    try:
        ranges = feed.resolve(spec, options)["dims"]
    except ValueError as e:
        raise ValueError(f"dims: {e}".replace("torchperf: error: ", "")) from None
    named = [{d: (name, *ranges[name]) for d, name in varying.items()} for varying in where]
    return spec, named


def export(model, inputs, path, named=None, log=None):
    """model exported to path with a dynamic batch (and named's dimensions dynamic); the export's
    own error as a TorchperfError naming `log` (default: beside the program), where what
    torch.export printed went."""
    import torch

    from torchperf import export_source

    # torch.export specialises a dimension of size 1: a batch of one is exported at two.
    if inputs[0].shape[0] == 1:
        inputs = tuple(torch.cat([t, t]) for t in inputs)
    was_training = model.training
    model.eval()
    # What torch.export prints (its graph, its guards) goes to a file beside the program: a
    # failure is one line naming it, a success says nothing.
    log = log or os.path.splitext(path)[0] + ".export.log"
    try:
        with _child.stderr_to(log):
            export_source.export_program(model, inputs, path, named=named)
    except Exception as e:
        first = (str(e).strip().splitlines() or [""])[0]
        printed = os.path.exists(log) and os.path.getsize(log) > 0
        raise TorchperfError(
            f"torch.export could not export the model ({type(e).__name__}: {first}); the core "
            "measures a module through its exported program, so this module cannot be tuned as "
            "it is (docs/python-api.md: what export needs)"
            + (f"; what torch.export printed, its graph among it, is in {log}" if printed else ""),
            exit_code=ErrorKind.MODEL) from e
    finally:
        model.train(was_training)
    with contextlib.suppress(OSError):
        os.remove(log)


def saved_module(model, path):
    """The caller's module saved for the python runtime's workers (module_file), or None, said
    on stderr, when it cannot travel: they then time the exported program's module, which costs
    more per call than the module itself."""
    from torchperf import module_file

    try:
        module_file.save(model, path)
        return path
    except module_file.ModuleFileError as e:
        import sys

        sys.stderr.write(f"torchperf: the python runtime measures the exported program, not your "
                         f"module: {e} (define the model's classes in a module of their own)\n")
        return None


def space_text(space):
    if space is None:
        return None
    if isinstance(space, str):
        return space
    if isinstance(space, dict):
        return ";".join(f"{k}={','.join(map(str, v if isinstance(v, (list, tuple)) else [v]))}"
                        for k, v in space.items())
    raise TypeError(f"space: expected 'knob=v1,v2;knob=...' or a dict of knob -> values, got "
                    f"{type(space).__name__}")


def knob_flags(knobs):
    flags = []
    for name, value in knobs.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        flags += [f"--{name.replace('_', '-')}", ",".join(map(str, values))]
    return flags


def default_runtimes(device=None, installed=None, cuda_available=None):
    """The runtimes a tune from Python sweeps unless told: the Python runtime and each engine
    this Python has that runs on the tune's device (ONNX Runtime on CUDA only as onnxruntime-gpu;
    OpenVINO not on CUDA), as the CLI sweeps every runtime that takes the model. Every one of
    them is a winner apply hands back and serve hosts."""
    from torchperf import engines

    if os.environ.get("TORCHPERF_ENGINES") == "none":
        return ["python"]
    if installed is None:
        installed = engines.installed()
    if cuda_available is None:
        import torch

        cuda_available = torch.cuda.is_available()
    device = str(device or "auto")
    cuda = device.startswith("cuda") or (device == "auto" and cuda_available)
    return ["python"] + [name for name, engine in runtimes.ENGINES.items()
                         if name in installed and engine.runs_on(cuda, installed[name])]


def default_out(model):
    stem = re.sub(r"[^A-Za-z0-9_-]", "-", type(model).__name__)
    return os.path.join("torchperf-runs", f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}")


def core_answer(stdout, command):
    """The core's JSON answer to `command` as an object; TorchperfError when it is not one
    (another torchperf than this package's, or a broken one)."""
    try:
        answer = json.loads(stdout)
    except ValueError as e:
        raise TorchperfError(f"{command}: the core's answer (torchperf {command} --json) is not "
                             f"JSON ({e})") from None
    if not isinstance(answer, dict):
        raise TorchperfError(f"{command}: the core's answer (torchperf {command} --json) is "
                             f"{type(answer).__name__}, not an object")
    return answer


def _figure(value, spec):
    """A number as `spec` formats it; "?" for a null (a non-finite figure in the core's JSON)."""
    return "?" if value is None else format(value, spec)


class BenchResult(dict):
    """bench's JSON (docs/json-schema.md) with the figures a caller reads most at the top:
    throughput (samples/s) and its 95% interval, latency percentiles (ms), the batch.
    RecordError naming the field when the JSON lacks them."""

    def __init__(self, answer):
        super().__init__(answer)
        self.figures = BenchFigures.from_json(answer)

    @property
    def throughput(self):
        return self.figures.throughput

    @property
    def throughput_ci(self):
        return self.figures.throughput_ci

    @property
    def latency_ms(self):
        return self.figures.latency_ms

    @property
    def batch(self):
        return self.figures.batch

    @property
    def valid(self):
        """False when the figures are not to be trusted as they are: the stopping rule not met
        within the time (the interval is wider than the target), NaN/Inf outputs, ..."""
        return self.figures.valid

    @property
    def invalid_reason(self):
        return self.figures.invalid_reason

    def __repr__(self):
        low, high = self.throughput_ci
        caveat = "" if self.valid else f", INCONCLUSIVE: {self.invalid_reason}"
        return (f"BenchResult({_figure(self.throughput, '.4g')} samples/s (95% CI "
                f"{_figure(low, '.4g')}-{_figure(high, '.4g')}), "
                f"p50 {_figure(self.latency_ms['p50'], '.3g')} ms, batch {self.batch}{caveat})")


def bench(model, example_inputs, *, time_s=None, **knobs):
    """Measures the model under one configuration (knob=value, as the CLI's flags: runtime="python",
    threads=2, graph="compile", ...) in a worker process; returns a BenchResult."""
    checked_model(model)
    inputs = checked_inputs(example_inputs, model)
    eager_outputs(model, inputs)
    folder = tempfile.mkdtemp(prefix="torchperf-bench-")
    try:
        program = os.path.join(folder, "model.pt2")
        # The folder goes at the end: a failed export's log is kept outside it.
        export(model, inputs, program,
               log=os.path.join(tempfile.gettempdir(), f"torchperf-export-{os.getpid()}.log"))
        args = ["bench", program, "--json"]
        module = saved_module(model, os.path.join(folder, "module.pt")) or "@program"
        args += ["--python-module", module]
        if "batch" not in knobs:
            args += ["--batch", str(inputs[0].shape[0])]
        if time_s is not None:
            args += ["--time", str(time_s)]
        # Exit 3: measured, but not conclusive (valid false, with its reason): the caller's call.
        out, _ = _core.run(args + knob_flags(knobs), progress=None, allow_exit={3})
        answer = core_answer(out, "bench")
        try:
            return BenchResult(answer)
        except RecordError as e:
            raise TorchperfError(f"bench: the core's answer (torchperf bench --json) is not what "
                                 f"the API reads ({e})") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def calibration_samples(calibration, inputs, model, named):
    """calibration as a tuple of tensors like the example inputs: as many, of their dtypes and
    sizes but the first (the samples) and the varying dimensions (`named`: per input, {dimension:
    ...}); TypeError or ValueError naming the first that differs."""
    try:
        samples = checked_inputs(calibration, model)
    except (TypeError, ValueError) as e:
        raise type(e)(str(e).replace("example_inputs", "calibration", 1)) from None
    varying = {(i, d) for i, where in enumerate(named or []) for d in where}
    if len(samples) != len(inputs):
        raise ValueError(f"calibration ({_child.describe_tensors(samples)}): {len(samples)} "
                         f"tensors where example_inputs has {len(inputs)} "
                         f"({_child.describe_tensors(inputs)})")
    for i, (s, x) in enumerate(zip(samples, inputs)):
        fixed = [d for d in range(1, x.dim()) if (i, d) not in varying]
        if s.dtype != x.dtype or s.dim() != x.dim() or any(s.shape[d] != x.shape[d] for d in fixed):
            raise ValueError(f"calibration: input {i} is {_child.describe_tensors((s,))}, where "
                             f"example_inputs' is {_child.describe_tensors((x,))}: expected the "
                             "same dtype and sizes but the first (the samples)")
    return samples


def tune(model, example_inputs, *, budget=None, objective="throughput", space=None, out=None,
         resume=False, accuracy=None, time_s=None, search=None, progress=True, cluster=None,
         dims=None, calibration=None, **knobs):
    """Tunes the model as tune does from the CLI (same meanings and defaults) and returns a
    TuneResult: every point, the winner with its interval and its speedup over the model as given
    (measured head to head), the journal and report, and apply(model).

    cluster="ray" measures the points on the Ray cluster at $RAY_ADDRESS (or "ray://HOST:PORT"),
    one point per node at a time, as `tune --cluster` does (docs/cluster.md). budget=None is the
    CLI's own default (`torchperf tune --help` shows it); a number is seconds.

    dims={"S": "lognormal:40:0.9:4..512"} tunes over a stream of lengths (docs/shapes.md): S is
    dimension 1 of every input (or say where: {"S": (DISTRIBUTION, {input: dimension})}), exported
    dynamic, and the padding and batching policies join the space.

    calibration=TENSORS (as example_inputs: a tensor, a tuple or a dict, many samples in the first
    dimension) are the real samples int8-static is calibrated on, by every point and by apply;
    without them each point calibrates on its own inputs, which the report says."""
    from torchperf.result import TuneResult

    if cluster is not None and (not isinstance(cluster, str) or not cluster.startswith("ray")):
        raise ValueError(f"cluster={cluster!r}: expected 'ray' (the cluster at $RAY_ADDRESS), "
                         "'ray://HOST:PORT' or 'ray:HOST:PORT'")
    checked_model(model)
    inputs = checked_inputs(example_inputs, model)
    spec, named = varying_dimensions(inputs, dims, model) if dims is not None else (None, None)
    if calibration is not None and resume:
        raise ValueError("calibration: a resumed tune goes on with the calibration of its first run "
                         "(its points were calibrated on it): leave calibration out")
    samples = None if calibration is None else calibration_samples(calibration, inputs, model, named)
    if isinstance(budget, (int, float)):
        budget = f"{budget}s"
    out = os.path.abspath(out or default_out(model))
    journal = os.path.join(out, "results.jsonl")
    identity_file = os.path.join(out, "source.json")
    outputs = eager_outputs(model, inputs)
    identity = {"model": f"{type(model).__module__}.{type(model).__qualname__}",
                "inputs": describe_signature(inputs), "fingerprint": fingerprint(model, inputs)}
    if os.path.exists(journal):
        try:
            with open(identity_file) as f:
                theirs = json.load(f)
        except (OSError, ValueError):
            theirs = None
        if not isinstance(theirs, dict):  # none, damaged, or not what tune writes
            theirs = {}
        if theirs.get("fingerprint") != identity["fingerprint"]:
            raise ValueError(f"out '{out}' holds the journal of another model "
                             f"({theirs.get('model', 'a model tuned from the CLI')}, "
                             f"inputs {theirs.get('inputs', '?')}; this is {identity['model']}, "
                             f"inputs {identity['inputs']}): choose another out")
        if not resume:
            raise ValueError(f"out '{out}' holds this model's tune journal already: "
                             "resume=True goes on from it, or choose another out")
    elif resume:
        raise ValueError(f"resume=True: out '{out}' holds no journal to go on from")
    os.makedirs(out, exist_ok=True)
    program = os.path.join(out, "model.pt2")
    module = os.path.join(out, "module.pt")
    if not resume:
        export(model, inputs, program, named)
        with open(identity_file, "w") as f:
            json.dump(identity, f)
        # "@program": the module could not travel; its program stands in, from Python still.
        module = saved_module(model, module) or "@program"
    import torch

    # The reference apply is judged against, and the inputs it is judged on.
    torch.save(inputs, os.path.join(out, "example_inputs.pt"))
    if samples is not None:
        torch.save(samples, os.path.join(out, "calibration.pt"))
    elif not resume and os.path.exists(os.path.join(out, "calibration.pt")):
        os.remove(os.path.join(out, "calibration.pt"))  # an earlier run's: not this tune's
    _child.save_outputs(outputs, os.path.join(out, "example_outputs.pt"))
    as_given = dict(AS_GIVEN, threads=str(torch.get_num_threads()))
    if resume:
        args = ["tune", "--resume", out]
    else:
        args = ["tune", program, "--out", out,
                "--as-given", configuration_key(as_given),
                "--objective", objective]
        args += ["--python-module", module]
        if spec is not None:
            args += ["--input", spec]
            for name, value in dims.items():
                args += ["--dim", f"{name}={value[0] if isinstance(value, tuple) else value}"]
        if samples is not None:
            args += ["--calibration", os.path.join(out, "calibration.pt")]
        if space is not None:
            args += ["--space", space_text(space)]
        if accuracy is not None:
            args += ["--accuracy", accuracy]
        if time_s is not None:
            args += ["--time", str(time_s)]
        if search is not None:
            args += ["--search", search]
        space_names = space_text(space) or ""
        if "runtime" not in knobs and not re.search(r"(^|;)\s*runtime\s*=", space_names):
            # What apply can hand back, measured as this process runs it: eager, torch.compile,
            # AOTInductor packages through Python's loader, and each engine installed here (as
            # the CLI sweeps them). runtime="cpp" measures the package in C++, for a C++
            # deployment.
            knobs = dict(knobs, runtime=default_runtimes(knobs.get("device")))
        if "batch" not in knobs and not re.search(r"(^|;)\s*batch\s*=", space_names):
            # The batch the caller passes is the batch tuned, unless a batch axis is asked for:
            # apply runs the winner on the caller's batches.
            knobs = dict(knobs, batch=inputs[0].shape[0])
        args += knob_flags(knobs)
    if cluster is not None:
        args += ["--cluster", cluster]
    if budget is not None:
        args += ["--budget", str(budget)]
    args += ["--json", "--progress-lines"]
    stdout, _ = _core.run(args, progress=progress, resume_hint=out, allow_exit={3})
    summary = core_answer(stdout, "tune")
    try:
        record = TuneSummary.from_json(summary)
    except RecordError as e:
        raise TorchperfError(f"tune: the core's answer (torchperf tune --json) is not what the API "
                             f"reads ({e}); its journal is {journal}") from None
    if not record.winner:
        measured = sum(1 for p in record.points if p.status is PointStatus.OK)
        if record.budget_exhausted and not record.points:
            named = f"budget '{budget}'" if budget is not None else "the default budget"
            # The core says why: what a point would have cost, and what was left.
            raise ValueError(f"{named} measured nothing: {record.winner_note}")
        raise TorchperfError(f"tune found no winner: {record.winner_note} ({measured} "
                             f"points passed; see {journal})", exit_code=ErrorKind.INVALID_RESULT)
    with open(os.path.join(out, "tune.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return TuneResult.from_folder(out)

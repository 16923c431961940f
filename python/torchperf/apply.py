"""The winner applied in the caller's process: the settings tune measured, on the caller's module
(python runtime) or the AOTInductor package it ran (C++ runtime), checked with tune's guard.

What a winner changes in this process is said when apply runs: the intra-op threads
(torch.set_num_threads) and Inductor's freezing flag are process-wide settings.
"""

import copy
import os
import sys
import tempfile

from torchperf import _child, _core, python_settings
from torchperf.error_kinds import ErrorKind
from torchperf.errors import TorchperfError
from torchperf.records import GuardVerdict, configuration_key
from torchperf.result import RESULTS_ERROR


def say(message):
    sys.stderr.write(f"torchperf: {message}\n")


class Applied:
    """The winner as a callable: inputs placed in the winner's format, calls inside its autograd
    mode and autocast. `configuration` is what it runs."""

    def __init__(self, fn, configuration, device, prepare_input=None, finish_output=None):
        self.fn = fn
        self.configuration = configuration
        self.device = device
        self._prepare = prepare_input or (lambda t: t)
        self._finish = finish_output or (lambda out: out)
        cfg = configuration
        self._grad = cfg.get("grad", "on")
        self._precision = cfg.get("precision", "fp32") if cfg.get("runtime") == "python" else "fp32"

    def __call__(self, *inputs):
        inputs = tuple(self._prepare(t) for t in inputs)
        with python_settings.call_contexts(self._grad, self._precision, self.device.type):
            return self._finish(self.fn(*inputs))

    def __repr__(self):
        return f"torchperf.Applied({configuration_key(self.configuration)})"


def _threads(configuration):
    import torch

    threads = configuration.get("threads")
    if threads and threads != "n/a" and int(threads) != torch.get_num_threads():
        say(f"threads={threads}: torch.set_num_threads({threads}) for this process "
            f"(it was {torch.get_num_threads()})")
        torch.set_num_threads(int(threads))


def _python_winner(result, model, configuration, device):
    import torch

    cache = os.path.join(result.folder, "artifacts", "compile_cache.bin")
    graph = configuration.get("graph", "eager")
    if graph != "eager" and os.path.exists(cache):
        with open(cache, "rb") as f:
            torch.compiler.load_cache_artifacts(f.read())
    memory_format = configuration.get("format", "contiguous")
    memory_format = "contiguous" if memory_format == "n/a" else memory_format
    precision = configuration.get("precision", "fp32")
    precision = "fp32" if precision == "n/a" else precision
    dtype = python_settings.converted_dtype(precision)
    # A copy: the caller's module keeps its mode, device and layout.
    module = copy.deepcopy(model).eval()
    module, _ = python_settings.place(module, (), device, memory_format, precision)
    backends = {k: configuration.get(k, "n/a") for k in ("cudnn_benchmark", "tf32")}
    if any(v not in ("n/a", "off", "default") for v in backends.values()):
        say("cudnn_benchmark/tf32: torch.backends flags for this process "
            f"({', '.join(f'{k}={v}' for k, v in backends.items())})")
    python_settings.set_backends(**backends)
    if graph != "eager":
        say(f"graph={graph}: torch.compile with Inductor's freezing "
            f"{'on' if configuration.get('grad', 'on') != 'on' else 'off'} (a process-wide "
            "setting); the first call compiles")
    fn = python_settings.compiled(module, graph, configuration.get("grad", "on"))
    return Applied(fn, configuration, device,
                   prepare_input=lambda t: python_settings.place_input(t, device, memory_format,
                                                                       dtype),
                   finish_output=_as_float if dtype is not None else None)


def _as_float(out):
    """Outputs of a model converted to bf16 or fp16 back in fp32, as the caller's model gives them."""
    import torch

    if torch.is_tensor(out):
        return out.float() if out.is_floating_point() else out
    return type(out)(_as_float(o) for o in out) if isinstance(out, (list, tuple)) else out


def _cpp_winner(result, configuration, device):
    import torch
    import torch._inductor

    if not configuration.get("graph", "").startswith("aoti"):
        raise TorchperfError(f"apply: the winner {result.record.winner} runs a TorchScript "
                             "graph in C++, which apply does not load; run it with the CLI "
                             "(torchperf report shows the C++ code)", exit_code=ErrorKind.USAGE)
    package = result.winner_package()
    if not package or not os.path.exists(package):
        where = (f"'{package}' is gone" if package else
                 f"neither {os.path.join(result.folder, 'artifacts', 'package.pt2')} nor the "
                 f"journal {result.journal} names one")
        raise TorchperfError(f"apply: the winner's AOTInductor package is missing ({where}): tune "
                             "again, or load a result saved with result.save", exit_code=ErrorKind.MODEL)
    runner = torch._inductor.aoti_load_package(package)
    dtype = torch.bfloat16 if configuration.get("precision") == "bf16" else None

    def prepare(t):
        t = t.to(device)
        # A bf16 package was compiled from the program cast to bf16: its inputs are bf16.
        return t.to(dtype) if dtype is not None and t.is_floating_point() else t

    def finish(out):
        if dtype is None:
            return out
        if torch.is_tensor(out):
            return out.float() if out.is_floating_point() else out
        return type(out)(finish(o) for o in out) if isinstance(out, (list, tuple)) else out

    return Applied(runner, configuration, device, prepare_input=prepare, finish_output=finish)


def example_inputs(result):
    """The example inputs tune saved in the result folder: TorchperfError (exit 6) naming the
    file when it is missing, damaged or holds something else than a tuple of tensors."""
    import torch

    path = os.path.join(result.folder, "example_inputs.pt")
    if not os.path.exists(path):
        raise TorchperfError(f"apply: '{path}' is missing: the result folder lacks the example "
                             "inputs the winner is checked on; tune again, or load a folder "
                             "written by result.save", exit_code=RESULTS_ERROR)
    try:
        inputs = torch.load(path)
    except Exception as e:  # not a torch.save file, truncated, or holding more than tensors
        first = (str(e).strip().splitlines() or [""])[0]
        raise TorchperfError(f"apply: '{path}' is damaged ({type(e).__name__}: {first})",
                             exit_code=RESULTS_ERROR) from None
    if not isinstance(inputs, (tuple, list)) or not inputs or \
            not all(torch.is_tensor(t) for t in inputs):
        raise TorchperfError(f"apply: '{path}' holds {type(inputs).__name__}, not the tuple of "
                             "tensors tune saved", exit_code=RESULTS_ERROR)
    return tuple(inputs)


def guard_answer(stdout):
    """`torchperf guard --json`'s verdict as a GuardVerdict: TorchperfError when the core answered
    something else (another torchperf than this package's, say)."""
    import json

    try:
        return GuardVerdict.from_json(json.loads(stdout))
    except ValueError:  # not JSON, or not the verdict (a RecordError)
        first = (stdout.strip().splitlines() or [""])[0][:120]
        raise TorchperfError("apply: `torchperf guard --json` answered no verdict (expected an "
                             f"object with 'passes' and 'why', got {first!r})") from None


def guard(result, applied):
    """The applied callable's output on the example inputs, judged by the core against the
    model's own (`torchperf guard`, tune's accuracy bounds); TorchperfError when it fails."""
    inputs = example_inputs(result)
    reference = os.path.join(result.folder, "example_outputs.pt")
    if not os.path.exists(reference):
        raise TorchperfError(f"apply: '{reference}' is missing: the result folder lacks your "
                             "model's outputs the winner is checked against; tune again, or load "
                             "a folder written by result.save", exit_code=RESULTS_ERROR)
    outputs = applied(*inputs)
    accuracy = result.record.accuracy
    with tempfile.TemporaryDirectory(prefix="torchperf-apply-") as folder:
        path = os.path.join(folder, "outputs.pt")
        _child.save_outputs(outputs, path)
        args = ["guard", reference, path, "--json"]
        if accuracy:
            args += ["--accuracy", accuracy]
        stdout, _ = _core.run(args, progress=None, allow_exit={3})
    verdict = guard_answer(stdout)
    if not verdict.passes:
        raise TorchperfError(f"apply: the winner's output on the example inputs fails the guard "
                             f"against your model's own ({verdict.why}); the model is not "
                             "replaced", exit_code=ErrorKind.INVALID_RESULT)
    return verdict


def apply(result, model):
    from torchperf import api

    api.checked_model(model, "apply: model")
    if not result.record.winner:
        raise result.no_winner("apply")
    if not result.beats_as_given:
        low, high = result.speedup_ci
        why = ("the winner is the model as given" if result.is_as_given else
               f"the winner is {result.speedup:.3f}x the model as given ({low:.3f}-{high:.3f}, "
               f"{result.verdict})" if result.speedup is not None and low is not None else
               "the winner was not measured against the model as given")
        say(f"apply: no configuration beat the model as given by more than the noise ({why}): "
            "the model is returned unchanged")
        return model
    import torch

    configuration = result.record.winner_configuration
    device = torch.device("cuda" if result.environment.get("cuda") and torch.cuda.is_available()
                          else "cpu")
    _threads(configuration)
    if configuration.get("runtime", "cpp") == "python":
        applied = _python_winner(result, model, configuration, device)
    else:
        applied = _cpp_winner(result, configuration, device)
    verdict = guard(result, applied)
    if configuration.get("runtime") == "python" and configuration.get("graph", "eager") != "eager":
        # torch.compile's cache artifacts of what apply just compiled, for result.save.
        try:
            artifacts = torch.compiler.save_cache_artifacts()
            if artifacts:
                result._cache_artifacts = artifacts[0]
        except Exception:  # a torch without the mega-cache: save holds no compile cache
            result._cache_artifacts = None
    cosine = f"cosine {verdict.cosine:.6f}" if verdict.cosine is not None else verdict.accuracy
    say(f"apply: {result.record.winner} ({result.speedup:.3f}x the model as given); its "
        f"output passes the guard ({cosine})")
    return applied

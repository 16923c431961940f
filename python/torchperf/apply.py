"""The winner applied in the caller's process: the settings tune measured, on the caller's module
(python runtime) or the AOTInductor package it ran (C++ runtime), checked with tune's guard.

What a winner changes in this process is said when apply runs: Inductor's freezing flag is a
process-wide setting; a winner at another thread count than the caller's sets it around each call
and restores the caller's after it.
"""

import copy
import os
import sys
import tempfile

from torchperf import (_child, _core, engine_graphs, feed, int8, python_settings, runtimes,
                       stream_policy)
from torchperf.error_kinds import ErrorKind
from torchperf.errors import TorchperfError
from torchperf.records import GuardVerdict, configuration_key
from torchperf.saved import ARTIFACTS, RESULTS_ERROR


def say(message):
    sys.stderr.write(f"torchperf: {message}\n")


# The careful baseline a person writes: the module as given, eval(), under inference_mode.
CAREFUL = {"runtime": "python", "graph": "eager", "grad": "inference", "precision": "fp32",
           "mode": "eval"}


class Applied:
    """The winner as a callable: inputs placed in the winner's format, each call inside its
    autograd mode and autocast (python_settings.call_function: the callable the worker timed) and,
    when the winner's thread count is not this process's, at the winner's threads, restored after
    each call. `configuration` is what it runs; `check`, what apply measured of it here."""

    def __init__(self, fn, configuration, device, threads=None):
        self.fn = fn
        self.configuration = configuration
        self.device = device
        self.check = None
        self._threads = threads
        self._names = None  # forward's positional arguments, for calls by keyword
        # The padding and batching policy a tune over a stream of lengths crowned (None for a
        # tune of one shape): batches() applies it to samples of varying length.
        self.policy = None

    def __call__(self, *inputs, **named):
        return self._run(self._ordered(inputs, named))

    def _run(self, inputs):
        return self.fn(*inputs)

    def batches(self, samples):
        """Samples of varying length (each a tuple of tensors, or a dict of forward's argument ->
        tensor, without the batch dimension) as the crowned policy batches them: yields
        (indices, inputs), each batch's samples and its padded inputs, to call this with."""
        if self.policy is None:
            raise TypeError(f"{self!r}: the tune measured one shape, not a stream of lengths "
                            "(dims=...): there is no padding or batching policy to apply")
        return self.policy.batches(samples, self._names)

    def _ordered(self, inputs, named):
        """The inputs in forward's order, the keyword ones put in their places as tune put the
        dict it was given (issue 63: a winner tuned on {"input_ids": ..., "attention_mask": ...}
        refused the same keywords)."""
        names = self._names or []
        if self._names is not None and len(inputs) > len(names):
            # Issue 84's probe: an engine's session read as many inputs as it has names and
            # dropped the rest, answering as if they were never given.
            raise TypeError(f"{self!r}: {len(inputs)} positional inputs, forward takes "
                            f"{len(names)} ({', '.join(names)})")
        if not named:
            return inputs
        given = dict(zip(names, inputs))
        for name in named:
            if name not in names:
                raise TypeError(f"{self!r}: forward has no argument '{name}' (it takes "
                                f"{', '.join(names) or 'no named arguments'})")
            if name in given:
                raise TypeError(f"{self!r}: argument '{name}' given by position and by keyword")
        given.update(named)
        last = max(names.index(name) for name in given)
        missing = [n for n in names[:last + 1] if n not in given]
        if missing:
            raise TypeError(f"{self!r}: argument '{missing[0]}' is left out before "
                            f"'{names[last]}'; the winner is called in forward's order")
        return tuple(given[n] for n in names[:last + 1])

    def __repr__(self):
        return f"torchperf.Applied({configuration_key(self.configuration)})"


def make_applied(fn, configuration, device, threads):
    """An Applied, scoped to the winner's threads when they are not the caller's."""
    return (_ScopedThreads if threads else Applied)(fn, configuration, device, threads)


class _ScopedThreads(Applied):
    """An Applied whose winner ran at another thread count than the caller's: each call sets it
    and restores the caller's, so apply changes nothing process-wide."""

    def _run(self, inputs):
        import torch

        theirs = torch.get_num_threads()
        torch.set_num_threads(self._threads)
        try:
            return self.fn(*inputs)
        finally:
            torch.set_num_threads(theirs)


def _threads(configuration):
    """The winner's thread count when it differs from this process's, else None."""
    import torch

    threads = configuration.get("threads")
    if threads and threads != "n/a" and int(threads) != torch.get_num_threads():
        say(f"threads={threads}: the winner's thread count is set around each call and this "
            f"process's ({torch.get_num_threads()}) restored after it")
        return int(threads)
    return None


def _python_winner(result, model, configuration, device, inputs):
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
    grad = configuration.get("grad", "on")
    grad = "on" if grad == "n/a" else grad
    # A copy: the caller's module keeps its mode, device and layout.
    module = copy.deepcopy(model).eval()
    module, _ = python_settings.place(module, (), device, memory_format, precision)
    backends = {k: configuration.get(k, "n/a") for k in ("cudnn_benchmark", "tf32")}
    if any(v not in ("n/a", "off", "default") for v in backends.values()):
        say("cudnn_benchmark/tf32: torch.backends flags for this process "
            f"({', '.join(f'{k}={v}' for k, v in backends.items())})")
    python_settings.set_backends(**backends)
    if precision in int8.PRECISIONS:
        batches, on = calibration_of(result, inputs, device)
        try:
            module, quantize_s = int8.quantized(module, precision, batches, device,
                                                shapes=[tuple(inputs)])
        except int8.Int8Error as e:
            raise TorchperfError(f"apply: {e}", exit_code=e.kind) from None
        say(f"precision={precision}: {int8.PRECISIONS[precision]}, in {quantize_s:.1f} s"
            + (f" (calibrated here on {on}; its batch stays dynamic)"
               if precision == "int8-static" else ""))
    if graph != "eager":
        say(f"graph={graph}: torch.compile with Inductor's freezing "
            f"{'on' if grad != 'on' else 'off'} (a process-wide setting); the first call compiles")
    fn = python_settings.call_function(python_settings.compiled(module, graph, grad), grad,
                                       precision, device, memory_format)
    return make_applied(fn, configuration, device, _threads(configuration))


def _script_winner(result):
    raise TorchperfError(f"apply: the winner {result.record.winner} runs a TorchScript graph in "
                         "C++, which apply does not load; run it with the CLI (torchperf report "
                         "shows the C++ code)", exit_code=ErrorKind.USAGE)


def _package_winner(result, configuration, device, inputs):
    import torch
    import torch._inductor

    package = result.winner_package()
    if not package or not os.path.exists(package):
        where = (f"'{package}' is gone" if package else
                 f"neither {os.path.join(result.folder, 'artifacts', 'package.pt2')} nor the "
                 f"journal {result.journal} names one")
        raise TorchperfError(f"apply: the winner's AOTInductor package is missing ({where}): tune "
                             "again, or load a result saved with result.save", exit_code=ErrorKind.MODEL)
    runner = python_settings.package_call(torch._inductor.aoti_load_package(package), inputs)
    # A bf16 package was compiled from the program cast to bf16: its inputs are bf16, converted
    # per call as the Python runtime's bf16 points convert them.
    precision = "bf16" if configuration.get("precision") == "bf16" else "fp32"
    fn = python_settings.call_function(runner, "on", precision, device)
    return make_applied(fn, configuration, device, _threads(configuration))


def engine_prepared(result, configuration, graph, device, inputs, folder):
    """An engine's winner converted (or read back) into `folder`: (callable, seconds spent, whether
    it was cached, what int8 calibrated on). The result's program converted as the worker
    converted the model."""
    from torchperf import engines

    program = os.path.join(result.folder, "model.pt2")
    if not os.path.exists(program):
        raise TorchperfError(f"apply: the winner {result.record.winner} runs a conversion of the "
                             f"program, and {program} is missing: tune again, or load a result "
                             "saved with result.save", exit_code=ErrorKind.MODEL)
    threads = configuration.get("threads", "n/a")
    precision = configuration.get("precision", "fp32")
    batches, on = calibration_of(result, inputs, device) if precision != "fp32" else (None, "")
    try:
        # The conversion's dynamic axes span the calibration samples' sizes too.
        fn, convert_s, cached = engines.prepared(
            graph, "program", program, None, [tuple(inputs)] + (batches or []),
            int(threads) if threads.isdigit() else 0, device, folder,
            precision=precision, calibration=batches)
    except engines.EngineError as e:
        raise TorchperfError(f"apply: {e}", exit_code=e.kind) from None
    return fn, convert_s, cached, on


def _engine_winner(result, configuration, graph, device, inputs):
    """An engine's winner (ONNX Runtime, OpenVINO) run here on torch tensors, its conversion kept
    in the result's artifacts (save puts it there, so a loaded result does not convert again). A
    loaded result's folder is never written: a conversion it lacks goes to torchperf's cache."""
    from torchperf import engines

    threads = configuration.get("threads", "n/a")
    folder = os.path.join(result.folder, ARTIFACTS, "engine")
    if getattr(result, "loaded", False) and not os.path.isdir(folder):
        folder = engines.cache_dir()
    fn, convert_s, cached, on = engine_prepared(result, configuration, graph, device, inputs,
                                                folder)
    kept = ("kept with the result" if folder.startswith(result.folder) else
            f"kept in torchperf's cache, {folder} (a loaded result's folder is not written)")
    say(f"graph={graph}: {'the conversion ' + kept if cached else f'converted the program in {convert_s:.1f} s, {kept}'}; "
        f"the engine runs at threads={threads} on its own thread pool")
    if configuration.get("precision") == "int8-static":
        say(f"precision=int8-static: ONNX Runtime's QDQ int8, calibrated here on {on}")
    return make_applied(fn, configuration, device, None)


def calibration_of(result, inputs, device):
    """(batches, what they are) int8 is calibrated on here: the samples tune was given
    (calibration.pt, tune(calibration=...)) in batches of the example inputs' batch, as the tune's
    points calibrated on them; else the example inputs tune saved."""
    import torch

    path = os.path.join(result.folder, "calibration.pt")
    if not os.path.exists(path):
        return [tuple(inputs)], ("the example inputs tune saved (the tune calibrated each point on "
                                 "its own inputs)")
    try:
        samples = tuple(torch.load(path))
    except Exception as e:
        first = (str(e).strip().splitlines() or [""])[0]
        raise TorchperfError(f"apply: '{path}' is damaged ({type(e).__name__}: {first})",
                             exit_code=RESULTS_ERROR) from None
    batches = int8.calibration_batches(samples, inputs[0].shape[0])
    return ([tuple(t.to(device) for t in b) for b in batches],
            f"the {samples[0].shape[0]} samples of the calibration tune was given ({path})")


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


def guard(result, applied, inputs):
    """The applied callable's output on the example inputs, judged by the core against the
    model's own (`torchperf guard`, tune's accuracy bounds); TorchperfError when it fails."""
    reference = os.path.join(result.folder, "example_outputs.pt")
    if not os.path.exists(reference):
        raise TorchperfError(f"apply: '{reference}' is missing: the result folder lacks your "
                             "model's outputs the winner is checked against; tune again, or load "
                             "a folder written by result.save", exit_code=RESULTS_ERROR)
    try:
        outputs = applied(*inputs)
    except Exception as e:  # the model's own error, or a compile's: named, not passed through bare
        first = (str(e).strip().splitlines() or [""])[0]
        raise TorchperfError(f"apply: the winner {result.record.winner} raised on the example "
                             f"inputs ({_child.describe_tensors(inputs)}): {type(e).__name__}: "
                             f"{first}", exit_code=ErrorKind.WORKLOAD) from e
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


def careful(model, device, threads):
    """What a careful person writes: the module as given, eval(), each call under inference_mode
    (its C++ guard), in fp32, at the winner's threads."""
    module = copy.deepcopy(model).eval().to(device)
    configuration = dict(CAREFUL, threads=str(threads) if threads else "n/a")
    fn = python_settings.call_function(module, "inference", "fp32", device)
    return make_applied(fn, configuration, device, threads)


def check_here(result, model, winner, device, inputs):
    """The applied winner timed in this process against the careful baseline and the model as
    given, at the winner's threads, alternated: an AppliedCheck. The careful baseline is returned
    instead of a winner slower than it in every round."""
    import torch

    from torchperf import in_process

    inputs = tuple(t.to(device) for t in inputs)
    threads = winner._threads
    baseline = careful(model, device, threads)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else None
    # The winner's threads are set once around the whole race, never inside or between timed
    # blocks: each side runs its callable unscoped (the per-call scoping, when the threads differ
    # from the caller's, is not in the figures).
    theirs = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        race = in_process.Race({"winner": winner.fn, "careful": baseline.fn, "as_given": model},
                               inputs, inputs[0].shape[0], sync=sync).run()
    finally:
        torch.set_num_threads(theirs)
    # A stream's figure is of a pass over samples of varying length, this one of the example
    # batch: no ratio of the two (issue 84's probe read "12.51x the 22 tune measured").
    stream = result.winner.get("tokens_per_s") is not None
    check = AppliedCheck(
        batch=int(inputs[0].shape[0]), throughput=race.throughput("winner"),
        stated=None if stream else result.winner["throughput"], careful=race.throughput("careful"),
        vs_careful=race.ratio("winner", "careful"), vs_as_given=race.ratio("winner", "as_given"),
        kept=True, stream=stream)
    # Slower in every round: a loss, not noise (a winner that is the careful code itself, or ties
    # it, reads above 1 in some rounds).
    if check.vs_careful.high < 1.0:
        check = AppliedCheck(**{**check.__dict__, "kept": False})
        baseline.check = check
        return baseline, check
    winner.check = check
    return winner, check


class AppliedCheck:
    """What apply measured here: the winner's samples/s at the caller's batch, what tune stated,
    and the winner over the careful baseline and over the model as given (alternated rounds).
    kept is False when the careful baseline won and was returned instead."""

    def __init__(self, batch, throughput, stated, careful, vs_careful, vs_as_given, kept,
                 stream=False):
        self.batch, self.throughput, self.stated, self.careful = batch, throughput, stated, careful
        self.vs_careful, self.vs_as_given, self.kept = vs_careful, vs_as_given, kept
        self.stream = stream

    @property
    def here_over_stated(self):
        return self.throughput / self.stated if self.stated else None

    def text(self):
        stated = (f", {self.here_over_stated:.2f}x the {self.stated:,.0f} tune measured"
                  if self.stated else
                  " (the tune measured a stream of lengths, this the example batch: not compared)"
                  if self.stream else "")
        return (f"at batch {self.batch}: {self.throughput:,.0f} samples/s{stated}; "
                f"{self.vs_careful.text()} eval()+inference_mode, "
                f"{self.vs_as_given.text()} the model as given")

    def __repr__(self):
        return f"AppliedCheck({self.text()})"


def forward_names(model):
    """forward's arguments that may be given by position, in order."""
    import inspect

    return [p.name for p in inspect.signature(model.forward).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def apply(result, model):
    feed.checked_model(model, "apply: model")
    if not result.record.winner:
        raise result.no_winner("apply")
    # A winner tune could not compare with the model as given (its budget ran out, or too few
    # rounds for an interval) is judged by the check in this process alone.
    if not result.beats_as_given and result.speedup_is_known:
        low, high = result.speedup_ci
        why = ("the winner is the model as given" if result.is_as_given else
               f"the winner is {result.speedup:.3f}x the model as given ({low:.3f}-{high:.3f}, "
               f"{result.verdict})")
        say(f"apply: no configuration beat the model as given by more than the noise ({why}): "
            "the model is returned unchanged")
        return model
    import torch

    configuration = result.record.winner_configuration
    device = torch.device("cuda" if result.environment.get("cuda") and torch.cuda.is_available()
                          else "cpu")
    inputs = example_inputs(result)  # read once: the package's call spec, the guard, the check
    # Each runtime's winner as its kind hands it back (runtimes.py decides the kind): a package
    # (graph=aoti*) runs in Python's loader, as the python runtime measured it.
    runtime = runtimes.of_configuration(configuration)
    hand_back = {runtimes.ENGINE: lambda: _engine_winner(result, configuration,
                                                         engine_graphs.graph_of(configuration),
                                                         device, inputs),
                 runtimes.TORCH: lambda: _python_winner(result, model, configuration, device,
                                                        inputs),
                 runtimes.PACKAGE: lambda: _package_winner(result, configuration, device, inputs),
                 runtimes.SCRIPT: lambda: _script_winner(result)}
    applied = hand_back[runtime.kind]()
    verdict = guard(result, applied, inputs)
    if runtime.compiles_here:
        # torch.compile's cache artifacts of what apply just compiled, for result.save.
        try:
            artifacts = torch.compiler.save_cache_artifacts()
            if artifacts:
                result._cache_artifacts = artifacts[0]
        except Exception:  # a torch without the mega-cache: save holds no compile cache
            result._cache_artifacts = None
    cosine = f"cosine {verdict.cosine:.6f}" if verdict.cosine is not None else verdict.accuracy
    applied, check = check_here(result, model, applied, device, inputs)
    applied._names = forward_names(model)
    applied.policy = stream_policy.from_result(result.journal, configuration)
    if applied.policy is not None:
        say(f"apply: the crowned policy ({applied.policy}) batches samples of varying length: "
            "applied.batches(samples)")
    result.applied_check = check
    if not check.kept:
        say(f"apply: {result.record.winner} loses to eval()+inference_mode in this process "
            f"({check.vs_careful.text()}): the careful baseline is returned instead")
        return applied
    say(f"apply: {result.record.winner}; its output passes the guard ({cosine}); in this "
        f"process {check.text()}")
    return applied

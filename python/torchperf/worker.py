"""The Python runtime's worker: one side of a measurement, driven block by block by the C++ side.

    python -m torchperf.worker

Requests arrive one JSON line each on stdin; answers leave one JSON line each on file descriptor 3
(as from the C++ worker), so a model that prints to stdout cannot break the protocol. The C++
side owns the statistics: it asks for timed blocks of N calls, decides when the measurement has
converged, and checks the outputs this worker saves against the fp32 reference. This worker
times nothing but the blocks it is asked for, with the device synchronized around each.

Jobs (protocol version 1, docs/worker-protocol.md):
  python-side
          load the model, apply the settings, make the first call (which compiles under
          torch.compile) and answer setup and compile times, graph breaks and the process state.
  block   {"iterations": N}: time N calls; answer {"ns", "minor_faults"}.
  finish  {"outputs": PATH}: one more call, its outputs saved to PATH; answer the peak memory.
  python-call
          serve one call (issue 84: `serve` hosts a Python or engine winner here): its inputs read
          from a region both processes map, its outputs written to another (shared_region.py).
          A call that fails is answered as such, and the worker serves the next.
Errors are answered {"ok": false, "error": {"kind", "message"}} with the C++ worker's kinds.
"""

import contextlib
import gc
import json
import os
import resource
import sys
import time

from torchperf import _child, engines, int8, python_settings, runtimes, shared_region
from torchperf.error_kinds import ErrorKind

def mapped_allocator(environ=os.environ):
    """The malloc this process runs on: a preloaded library as the loader mapped it, or glibc,
    with the MALLOC_* variables glibc read at start (allocator=glibc-tuned sets them, so that a
    tuned point's record is not shown as plain glibc). The C++ side checks the library against
    the allocator asked for, as its own worker does."""
    tuned = ", ".join(f"{k}={v}" for k, v in sorted(environ.items())
                      if k.startswith("MALLOC_") and k.endswith("_"))
    found = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                name = os.path.basename(line.split()[-1]) if len(line.split()) >= 6 else ""
                if name.startswith("lib") and "malloc" in name.partition(".so")[0]:
                    found.add(name)
    except OSError:
        pass
    return (", ".join(sorted(found)) or "glibc") + (f" ({tuned})" if tuned else "")

PROTOCOL_VERSION = 1


class JobError(Exception):
    """An error answered to the C++ side with its kind, an ErrorKind (error_kinds.py)."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


concise = _child.concise
is_out_of_memory = _child.is_out_of_memory


def compile_error_line(error):
    """The compiler's first error line, which names what failed, else the exception's first line."""
    text = str(error)
    for line in text.splitlines():
        if "error:" in line.lower():
            return " ".join(line.split())
    return concise(error)


def resident_high_water_bytes():
    """VmHWM of this process, the peak resident set since the last reset."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def release_free_memory():
    """Gives back what glibc's malloc keeps of freed memory (malloc_trim), so that a call's peak
    over the resident size counts what it allocates, not pages it reuses. Another allocator
    (preloaded) has no malloc_trim: its kept pages then hide part of the peak."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def reset_high_water():
    """Resets VmHWM (Linux clear_refs 5), so the peak is the measurement's, not the compile's."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def load_model(kind, path):
    """The callable a side times, from the model reference the C++ side sends."""
    import torch

    if kind == "program":
        import zipfile

        try:
            names = zipfile.ZipFile(path).namelist()
        except (OSError, zipfile.BadZipFile) as e:
            raise JobError(ErrorKind.MODEL, f"model '{path}': not a torch.export archive ({concise(e)})")
        if any("/data/aotinductor/" in n for n in names):
            raise JobError(ErrorKind.MODEL, f"model '{path}': an AOTInductor package, not an ExportedProgram")
        try:
            return _child.export_load(path).module()
        except Exception as e:
            raise JobError(ErrorKind.MODEL, f"model '{path}': torch.export.load failed ({concise(e)})")
    if kind == "package":
        import torch._inductor

        try:
            return torch._inductor.aoti_load_package(path)
        except Exception as e:
            raise JobError(ErrorKind.MODEL, f"AOTInductor package '{path}': aoti_load_package "
                                            f"failed ({concise(e)})")
    if kind == "module":
        from torchperf import module_file

        try:
            return module_file.load(path)
        except module_file.ModuleFileError as e:
            raise JobError(ErrorKind.MODEL, str(e))
    if kind == "torchscript":
        try:
            return torch.jit.load(path, map_location="cpu").eval()
        except Exception as e:
            raise JobError(ErrorKind.MODEL, f"model '{path}': torch.jit.load failed ({concise(e)})")
    if kind == "builtin":  # NAME@SEED: the built-in's own definition, as its forms were made
        from torchperf import builtin_models

        name, seed = path.rsplit("@", 1)
        return builtin_models.build(name, int(seed))
    if kind == "python":
        from torchperf import export_source

        reference = path
        try:
            return export_source.build_model(reference, export_source.load_callable(reference)).eval()
        except SystemExit as e:  # export_source fails with a message on stderr and an exit code
            raise JobError(ErrorKind.MODEL, f"--from-python '{reference}' could not be loaded (exit {e.code})")
    raise JobError(ErrorKind.USAGE, f"unknown model kind '{kind}' (expected program, module, package, torchscript, builtin or python)")


# A worker may serve several sides in turn: a tune's brief points that share their process state
# (issue 60). What they would each pay again is kept here: the loaded models (each side takes a
# copy, as placing converts a module in place) and torch.compile's compiled callables by the
# settings they were compiled under, so that points differing only in their stream (batching,
# padding), which a compile does not depend on, share one compile, paid once.
_LOADED = {}
_COMPILED = {}
# The most compiled callables kept (each holds its graphs and frozen constants): a tune's screen
# compiles five or six graphs in one worker (modes, precisions), and a finalist whose graph was
# dropped compiled it again (11-14 s of the encoder's 5-minute tune, bench section 23).
_COMPILED_KEPT = 8


# torch._dynamo's recompile limit (8 graphs of one function; past it a call runs eagerly, in
# silence) while this worker compiles static graphs: the points of a process state share the
# worker and so the function's count, and a second padding's widths went past the eighth (bench
# 23's compile-static at multiple:64 after buckets). A point's own padding leaves at most 8 widths
# (the space's rule), as a winner applied in the user's process does.
_STATIC_RECOMPILE_LIMIT = 64


def recompile_limit_hits():
    """How often torch._dynamo has reached its recompile limit in this process (each time, a
    function then ran eagerly)."""
    from torch._dynamo.utils import counters

    return sum(n for reason, n in counters["unimplemented"].items()
               if "recompile limit" in str(reason).lower())


def available_memory_bytes():
    """MemAvailable, or None where /proc/meminfo does not say."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def keep_compiled(key, value, resident=resident_bytes, available=available_memory_bytes):
    """Keeps a compiled callable for the points after this one, the oldest dropped first while
    more than _COMPILED_KEPT are kept or this worker holds more than half of what it could hold
    (its resident set and what the machine has available): a tune caps a worker at 90% of what
    was available, and a kept graph must not be what crosses it."""
    while _COMPILED and len(_COMPILED) >= _COMPILED_KEPT:
        _COMPILED.pop(next(iter(_COMPILED)))
    free = available()
    while _COMPILED and free is not None and resident() > (resident() + free) / 2:
        _COMPILED.pop(next(iter(_COMPILED)))
        gc.collect()
        free = available()
    _COMPILED[key] = value


def loaded_model(kind, path):
    """A model for one side: loaded once per worker, a copy per side (a package, never converted
    in place, is shared)."""
    import copy

    key = (kind, path)
    if key not in _LOADED:
        _LOADED[key] = load_model(kind, path)
    model = _LOADED[key]
    return model if kind == "package" else copy.deepcopy(model)


def load_stream(path):
    """The stream's batches (a tuple of tuples of tensors) the C++ side saved, or none."""
    import torch

    if not path:
        return []
    try:
        return [tuple(batch) for batch in torch.load(path)]
    except Exception as e:
        raise JobError(ErrorKind.WORKLOAD, f"stream file '{path}': {concise(e)}")


def calibration(settings, inputs, stream, device):
    """What int8 calibrates on: the samples of the calibration file (settings["calibration"]) in
    batches of the point's batch, or the point's own inputs and stream."""
    import torch

    path = settings["calibration"]
    if not path:
        return [inputs] + stream
    try:
        samples = torch.load(path)
        samples = (samples,) if torch.is_tensor(samples) else tuple(samples)
    except Exception as e:
        raise JobError(ErrorKind.WORKLOAD, f"calibration file '{path}': {concise(e)}")
    batch = inputs[0].shape[0] if inputs and inputs[0].dim() > 0 else 0
    return [tuple(t.to(device) for t in b) for b in int8.calibration_batches(samples, batch)]


def save_compile_artifacts(path):
    """torch.compile's cache artifacts of what this process just compiled (Inductor's kernels and
    FX graphs, torch.compiler.save_cache_artifacts), written to `path` before anything is timed:
    tune keeps its winner's, and `apply` loads them instead of compiling again. A torch without
    the mega-cache, or nothing to save, writes nothing: Inductor's FX graph cache skips frozen
    graphs (grad=inference on a CPU), so those compile again in apply."""
    if not path:
        return
    try:
        import torch

        saved = torch.compiler.save_cache_artifacts()
        if not saved:
            return
        partial = f"{path}.partial-{os.getpid()}"
        with open(partial, "wb") as f:
            f.write(saved[0])
        os.replace(partial, path)
    except Exception:  # only a cache: the point itself is unaffected
        return

class Side:
    """A model prepared under one configuration's settings, timed block by block."""

    def __init__(self, request):
        import torch

        started = time.perf_counter()
        self.rss_before = resident_bytes()  # before the model is loaded, as the C++ side reports it
        settings = fields(request, PYTHON_SIDE_REQUEST)
        self.settings = settings
        if settings["calibration"] and not os.path.isfile(settings["calibration"]):
            # Said before the model is loaded (a failed answer ends the worker, as ever).
            raise JobError(ErrorKind.WORKLOAD, f"calibration file '{settings['calibration']}': no "
                                               "such file")
        try:
            self.device = torch.device(settings["device"] or "cpu")
        except RuntimeError as e:
            raise JobError(ErrorKind.CONFIG, f"device '{settings['device']}': {concise(e)}")
        threads = settings["threads"]
        if threads > 0:
            torch.set_num_threads(threads)
        interop = settings["interop_threads"]
        if interop > 0:
            with contextlib.suppress(RuntimeError):  # set once per process, before parallel work
                torch.set_num_interop_threads(interop)

        runtime = runtimes.of_side(settings)
        if runtime.kind == runtimes.ENGINE:
            self.open_engine(settings, started)
            return
        compiled_key = (settings["model_kind"], settings["model"], settings["graph"],
                        settings["grad"], settings["precision"], settings["format"],
                        settings["device"], settings["threads"])
        if settings["precision"] in int8.PRECISIONS:
            # Calibrated on this point's own inputs and stream (or the calibration file's samples
            # in its batches): never another point's graph.
            compiled_key += (settings["inputs"], settings["stream"], settings["calibration"])
        reused = compiled_key in _COMPILED
        model = None if reused else loaded_model(settings["model_kind"], settings["model"])
        try:
            inputs = tuple(torch.load(settings["inputs"]))
        except Exception as e:
            raise JobError(ErrorKind.WORKLOAD, f"inputs file '{settings['inputs']}': {concise(e)}")

        grad, graph, precision = settings["grad"], settings["graph"], settings["precision"]
        package = runtime.kind == runtimes.PACKAGE
        if package:
            # A package runs as it was compiled: no autograd around it, its inputs converted to
            # its precision per call, as apply's callable converts them.
            grad = "on"
        try:
            python_settings.set_backends(settings["cudnn_benchmark"], settings["tf32"])
            if not package and not reused:
                model, _ = python_settings.place(model, (), self.device, settings["format"],
                                                 precision)
            # The inputs as the caller holds them (on the device, in fp32 and their own layout):
            # the conversions the point needs are timed, as apply's callable makes them per call.
            self.inputs = tuple(t.to(self.device) for t in inputs)
            # Shapes that vary (--dim): a timed call is one pass over the stream's timed batches
            # (drawn across its padded sizes), built by the C++ side so that every runtime runs
            # the same samples.
            self.stream = [tuple(t.to(self.device) for t in batch) for batch in load_stream(settings["stream"])]
            self.graph_break_count, self.graph_break_reasons = 0, []
            self.compile_s, self.quantize_s = -1.0, 0.0
            compiling = graph != "eager" and not package
            self.compile_reused = reused and compiling
            if reused:
                self.fn, self.graph_break_count, self.graph_break_reasons = _COMPILED[compiled_key]
            else:
                if compiling and not _COMPILED:
                    import torch._dynamo

                    torch._dynamo.reset()  # a fresh worker's first compile starts clean
                if precision in int8.PRECISIONS:
                    # Quantizing is part of the point's compile, calibrated on its own inputs.
                    model, self.quantize_s = int8.quantized(
                        model, precision,
                        calibration(settings, self.inputs, self.stream, self.device), self.device,
                        shapes=[self.inputs] + self.stream)
                fn = (python_settings.package_call(model, self.inputs) if package else
                      python_settings.compiled(model, graph, grad))
                self.fn = python_settings.call_function(fn, grad, precision, self.device,
                                                        settings["format"])
        except python_settings.SettingsError as e:
            raise JobError(ErrorKind.CONFIG, str(e))
        except int8.Int8Error as e:
            raise JobError(e.kind, str(e))
        if compiling:
            from torch._dynamo.utils import counters

            breaks_before = dict(counters.get("graph_break", {}))
            limit_hits = recompile_limit_hits()
            if graph == "compile-static":
                import torch._dynamo.config as dynamo_config

                dynamo_config.recompile_limit = max(dynamo_config.recompile_limit,
                                                    _STATIC_RECOMPILE_LIMIT)

        self.sync()
        first = time.perf_counter()
        try:
            self.outputs = self.fn(*self.inputs)
            self.sync()
        except Exception as e:
            self.raise_call_error(e, graph != "eager")
        first_call_s = time.perf_counter() - first
        if compiling:
            # torch.compile compiles on the first call: that call's time is the compile's (a
            # compile an earlier side of this worker paid costs this one its first call only).
            self.compile_s = first_call_s + self.quantize_s
            if not reused:
                reasons = {r: n - breaks_before.get(r, 0)
                           for r, n in counters.get("graph_break", {}).items()
                           if n > breaks_before.get(r, 0)}
                self.graph_break_count = int(sum(reasons.values()))
                self.graph_break_reasons = [" ".join(str(r).split())[:300] for r in list(reasons)[:3]]
                keep_compiled(compiled_key,
                              (self.fn, self.graph_break_count, self.graph_break_reasons))
            save_compile_artifacts(settings["compile_artifacts"])
        elif self.quantize_s > 0:
            self.compile_s = self.quantize_s  # an eager point's one-off: quantizing alone
        self.stream_warm_s, self.stream_graphs = -1.0, 0
        if self.stream:
            self.warm_stream(compiling)
        if compiling and recompile_limit_hits() > limit_hits:
            import torch._dynamo.config as dynamo_config

            raise JobError(ErrorKind.COMPILE,
                           f"graph={graph}: torch.compile reached its recompile limit "
                           f"({dynamo_config.recompile_limit} graphs of one function) over these "
                           f"inputs' shapes and ran the rest eagerly, so this point would not "
                           f"measure what it names")
        self.setup_ms = (time.perf_counter() - started) * 1e3
        self.peak_reset = reset_high_water()

    def open_engine(self, settings, started):
        """A point of an engine (ONNX Runtime, OpenVINO): the model converted (or read back from
        the cache), its session made and called once, which is the point's compile, reported
        apart as torch.compile's first call is; then the stream warmed as any point's."""
        import torch

        try:
            self.inputs = tuple(t.to(self.device) for t in torch.load(settings["inputs"]))
        except Exception as e:
            raise JobError(ErrorKind.WORKLOAD, f"inputs file '{settings['inputs']}': {concise(e)}")
        self.stream = [tuple(t.to(self.device) for t in batch) for batch in load_stream(settings["stream"])]
        self.graph_break_count, self.graph_break_reasons = 0, []
        kind, path = settings["model_kind"], settings["model"]
        try:
            self.fn, _, self.compile_reused = engines.prepared(
                settings["graph"], kind, path, lambda: loaded_model(kind, path),
                [self.inputs] + self.stream, settings["threads"], self.device,
                precision=settings["precision"],
                calibration=(calibration(settings, self.inputs, self.stream, self.device)
                             if settings["precision"] != "fp32" else None))
            self.sync()
            self.outputs = self.fn(*self.inputs)
        except engines.EngineError as e:
            raise JobError(e.kind, str(e))
        except JobError:
            raise
        except Exception as e:
            if is_out_of_memory(e):
                raise JobError(ErrorKind.RESOURCE_LIMIT, f"out of memory: {concise(e)}")
            raise JobError(ErrorKind.COMPILE, f"graph={settings['graph']}: the engine failed running "
                                              f"the converted model on {_child.describe_tensors(self.inputs)} "
                                              f"({concise(e)})")
        self.sync()
        self.compile_s = time.perf_counter() - started
        self.stream_warm_s, self.stream_graphs = -1.0, 0
        if self.stream:
            self.warm_stream(True)
        self.setup_ms = (time.perf_counter() - started) * 1e3
        self.peak_reset = reset_high_water()

    def warm_stream(self, compiling):
        """One pass over the stream before timing: each of its shapes compiled (torch.compile
        recompiles per new size unless its graph is dynamic) or allocated once, a one-off cost
        reported apart, as the first call's compile is."""
        from torch._dynamo.utils import counters

        graphs = counters["stats"]["unique_graphs"]
        warm = time.perf_counter()
        try:
            for batch in self.stream:
                self.fn(*batch)
            self.sync()
        except Exception as e:
            self.raise_call_error(e, compiling)
        self.stream_warm_s = time.perf_counter() - warm
        self.stream_graphs = int(counters["stats"]["unique_graphs"] - graphs)

    def raise_call_error(self, error, compiling):
        if is_out_of_memory(error):
            raise JobError(ErrorKind.RESOURCE_LIMIT, f"out of memory: {concise(error)}")
        if compiling:
            import torch._dynamo.exc as dynamo_exc

            if isinstance(error, (dynamo_exc.BackendCompilerFailed, dynamo_exc.InternalTorchDynamoError)) \
                    or "compile" in type(error).__name__.lower():
                raise JobError(ErrorKind.COMPILE, f"torch.compile failed: {compile_error_line(error)}")
        raise JobError(ErrorKind.WORKLOAD, f"the model rejected its inputs ({_child.describe_tensors(self.inputs)}): "
                                   f"{concise(error)}")

    def sync(self):
        import torch

        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def ready(self):
        import torch

        return {"setup_ms": self.setup_ms, "compile_s": self.compile_s,
                "compile_reused": self.compile_reused,
                "stream_warm_s": self.stream_warm_s, "stream_graphs": self.stream_graphs,
                "graph_break_count": self.graph_break_count,
                "graph_break_reasons": self.graph_break_reasons, "rss_before_bytes": self.rss_before,
                "process": {"runtime": "python", "python": sys.version.split()[0],
                            "torch": torch.__version__, "threads": str(torch.get_num_threads()),
                            "interop_threads": str(torch.get_num_interop_threads()),
                            "allocator": mapped_allocator()}}

    def block(self, iterations):
        if iterations < 1:
            raise JobError(ErrorKind.PROTOCOL, f"block of {iterations} iterations: expected at least 1")
        fn, inputs, stream = self.fn, self.inputs, self.stream
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        self.sync()
        start = time.perf_counter_ns()
        # Each call's outputs are dropped before the next call, as the C++ worker drops its
        # IValue: torch.compile's CUDA graphs (reduce-overhead) may then overwrite them.
        if stream:
            for _ in range(iterations):
                for batch in stream:
                    fn(*batch)
        else:
            for _ in range(iterations):
                fn(*inputs)
        self.sync()
        ns = time.perf_counter_ns() - start
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        return {"ns": ns, "minor_faults": faults}

    def finish(self, path, padding_check="", padding_outputs=""):
        outputs = self.fn(*self.inputs)
        self.sync()
        peak = resident_high_water_bytes()
        count = _child.save_outputs(outputs, path) if path else len(_child.flatten(outputs))
        if padding_check:
            # Each sample's padded batch, and the sample alone unpadded: padding must not change
            # its answer (the C++ side cuts the batch's row to the sample and compares).
            for i, (batch, sample) in enumerate(load_stream(padding_check)):
                padded = tuple(t.to(self.device) for t in batch)
                _child.save_outputs(self.fn(*padded), f"{padding_outputs}-{i}-padded.pt")
                alone = tuple(t.to(self.device) for t in sample)
                _child.save_outputs(self.fn(*alone), f"{padding_outputs}-{i}-alone.pt")
        return {"peak_memory_bytes": peak, "peak_memory_reset": self.peak_reset,
                "outputs": count}

    def call(self, request):
        """One served call: the inputs as the region holds them (the client's bytes, batched and
        padded by the server), through the callable the points timed; the outputs written back.
        With measure_memory, the most resident memory the call added (serve bounds a call by it)."""
        if not hasattr(self, "in_region"):
            self.in_region, self.out_region = shared_region.Region(), shared_region.Region()
        try:
            region = self.in_region.mapped(request["region"], request["region_size"])
            inputs = shared_region.read_tensors(region, request["inputs"])
        except (OSError, ValueError) as e:
            raise JobError(ErrorKind.PROTOCOL, f"the call's inputs in '{request['region']}': "
                                               f"{concise(e)}")
        inputs = tuple(t.to(self.device) for t in inputs)
        measure = request["measure_memory"]
        if measure:
            release_free_memory()
            before = resident_bytes()
            reset_high_water()
        try:
            outputs = self.fn(*inputs)
            self.sync()
        except Exception as e:
            if is_out_of_memory(e):
                raise JobError(ErrorKind.RESOURCE_LIMIT, f"out of memory: {concise(e)}")
            raise JobError(ErrorKind.WORKLOAD, f"the model failed on "
                                               f"{_child.describe_tensors(inputs)}: {concise(e)}")
        peak = max(0, resident_high_water_bytes() - before) if measure else 0
        del inputs
        entries, size = shared_region.write_tensors(self.out_region, request["outputs"],
                                                    _child.flatten(outputs))
        return {"outputs": entries, "region_size": size, "peak_bytes": peak}


def error(kind, message):
    """The error reply: kind is an ErrorKind, said by its name in the table."""
    return {"ok": False, "error": {"kind": kind.wire_name, "message": " ".join(str(message).split())}}


def answer_of(handler):
    try:
        result = handler()
        result["ok"] = True
        return result
    except JobError as e:
        return error(e.kind, str(e))
    except MemoryError as e:
        return error(ErrorKind.RESOURCE_LIMIT, f"out of memory ({concise(e)})")
    except Exception as e:  # anything else is a failure of this side, answered, never a crash
        return error(ErrorKind.RESOURCE_LIMIT if is_out_of_memory(e) else ErrorKind.RUNTIME, concise(e))


# The fields of each message, as protocol.h lists them (`torchperf __protocol` prints that list;
# tests/python/test_worker.py checks these against it). A missing or mistyped field is a protocol
# error naming it, as on the C++ side.
PYTHON_SIDE_REQUEST = {"slot": int, "model_kind": str, "model": str, "inputs": str, "stream": str,
                       "graph": str, "precision": str, "format": str, "grad": str, "threads": int,
                       "interop_threads": int, "device": str, "cudnn_benchmark": str,
                       "tf32": str, "compile_artifacts": str, "calibration": str}
PYTHON_BLOCK_REQUEST = {"slot": int, "iterations": int}
PYTHON_FINISH_REQUEST = {"slot": int, "outputs": str, "padding_check": str, "padding_outputs": str}
PYTHON_CALL_REQUEST = {"slot": int, "region": str, "region_size": int, "inputs": list,
                       "outputs": str, "measure_memory": bool}
WIRE_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array",
              dict: "object"}


def fields(request, spec):
    """The request's fields of spec, each checked for presence and type."""
    job = request.get("job")
    values = {}
    for name, kind in spec.items():
        if name not in request:
            raise JobError(ErrorKind.PROTOCOL, f"the '{job}' request has no field '{name}'")
        value = request[name]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise JobError(ErrorKind.PROTOCOL, f"the '{job}' request: field '{name}' is not of type "
                                       f"{WIRE_TYPES[kind]}")
        values[name] = value
    return values


def checked(request):
    if not isinstance(request, dict):
        raise JobError(ErrorKind.PROTOCOL, "a request is a JSON object")
    version = request.get("protocol")
    if version != PROTOCOL_VERSION:
        raise JobError(ErrorKind.PROTOCOL, f"the request speaks worker protocol {version!r}, this worker "
                                   f"{PROTOCOL_VERSION}: the supervisor and the worker come from "
                                   f"different builds")
    return request


def serve_side(lines, out, first_job, finish_job, open_side, handle):
    """Serves one side of a comparison: the first request must be `first_job`, answered with
    open_side(request).ready(); every later request is answered with handle(side, job, request)
    until `finish_job`, a failed answer, or the end of the input. Each kind of side has its own
    job names: no name means two messages."""

    def send(response):
        out.write(json.dumps(response) + "\n")
        out.flush()
        return response["ok"]

    def parse(line):
        try:
            return checked(json.loads(line))
        except json.JSONDecodeError as e:
            raise JobError(ErrorKind.PROTOCOL, f"malformed worker request: {e}")

    first = next(lines, "")
    side = None

    def start():
        nonlocal side
        request = parse(first)
        if request.get("job") != first_job:
            raise JobError(ErrorKind.PROTOCOL, f"this worker starts with a {first_job} job, not "
                                       f"'{request.get('job')}'")
        side = open_side(request)
        return side.ready()

    if not send(answer_of(start)):
        return 1
    for line in lines:
        done = False

        def step():
            nonlocal done
            request = parse(line)
            job = request.get("job")
            if job == finish_job:
                done = True
            return handle(side, job, request)

        if not send(answer_of(step)) or done:
            return 0 if done else 1
    return 0


def serve(lines, out):
    """Serves sides, each addressed by its slot: a "python-side" request opens one, its blocks
    follow, its "python-finish" closes it. A tune's brief points that share their process state
    send their sides to one worker in turn, and a head-to-head pair of one process state keeps
    both of its sides open here, blocks alternating (what each would load and compile again is
    kept: loaded_model, _COMPILED). A failed answer ends the worker, as a side's failure did."""
    sides = {}

    def send(response):
        out.write(json.dumps(response) + "\n")
        out.flush()
        return response["ok"]

    def open_side(request):
        try:
            import torch  # noqa: F401  (the runtime itself: its absence is the user's set-up)
        except ImportError as e:
            raise JobError(ErrorKind.USAGE, f"the Python at {sys.executable} cannot import torch ({e}): the "
                                    "python runtime needs the .venv (make venv) or TORCHPERF_PYTHON "
                                    "naming a Python with torch")
        return Side(request)

    def open_slot(job, slot):
        if slot not in sides:
            raise JobError(ErrorKind.PROTOCOL, f"a '{job}' request for slot {slot}, where no side is "
                                       f"open (open: {sorted(sides) or 'none'})")
        return sides[slot]

    def step(line):
        try:
            request = checked(json.loads(line))
        except json.JSONDecodeError as e:
            raise JobError(ErrorKind.PROTOCOL, f"malformed worker request: {e}")
        job = request.get("job")
        if job == "python-side":
            slot = fields(request, PYTHON_SIDE_REQUEST)["slot"]
            sides.pop(slot, None)  # a slot opened again replaces the side it held
            sides[slot] = open_side(request)
            return sides[slot].ready()
        if job == "python-block":
            block = fields(request, PYTHON_BLOCK_REQUEST)
            return open_slot(job, block["slot"]).block(block["iterations"])
        if job == "python-finish":
            done = fields(request, PYTHON_FINISH_REQUEST)
            side = open_slot(job, done["slot"])
            del sides[done["slot"]]
            return side.finish(done["outputs"], done["padding_check"], done["padding_outputs"])
        if job == "python-call":
            call = fields(request, PYTHON_CALL_REQUEST)
            return open_slot(job, call["slot"]).call(call)
        if not sides:
            raise JobError(ErrorKind.PROTOCOL, f"this worker starts with a python-side job, not "
                                       f"'{job}'")
        raise JobError(ErrorKind.PROTOCOL, f"unknown side job '{job}'")

    for line in lines:
        if not send(answer_of(lambda: step(line))) and not serving_call(line):
            return 1
    return 0


def serving_call(line):
    """Whether a request is a served call: one that fails (a request the model rejects) is
    answered, and the worker goes on serving."""
    try:
        return json.loads(line).get("job") == "python-call"
    except (ValueError, AttributeError):
        return False


def run(serve_lines, name):
    """A worker's process: answers go to fd 3; whatever the model prints goes to the log (stdout
    joins stderr); requests are read from stdin and served by serve_lines(lines, out)."""
    try:
        out = os.fdopen(3, "w")
    except OSError:
        sys.stderr.write(f"{name}: file descriptor 3 (the answers) is not open\n")
        return 2
    sys.stdout = sys.stderr
    return serve_lines(iter(sys.stdin.readline, ""), out)


def main():
    return run(serve, "torchperf.worker")


if __name__ == "__main__":
    sys.exit(main())

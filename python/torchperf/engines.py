"""The engines a torch.export program converts to, run on torch tensors: ONNX Runtime (the program
exported by torch.onnx's dynamo exporter) and OpenVINO (openvino.convert_model of the program).

    python -m torchperf.engines --installed

answers which engines this Python has, from package metadata (nothing is imported), for the C++
side's runtimes. The worker (worker.py) prepares an engine point with `prepared`, and the API's
apply (apply.py) the winner with the same call: what apply hands back is what was measured.

A conversion is done once per model, input signature and versions, and cached on disk in
torchperf's cache (TORCHPERF_CACHE_DIR, as the C++ side finds it): the ONNX file and OpenVINO's IR,
each with the program's output structure, so that a second point, tune or apply reads it back.
"""

import argparse
import contextlib
import hashlib
import json
import os
import sys
import time

from torchperf import _child
from torchperf.engine_graphs import BY_GRAPH
from torchperf.error_kinds import ErrorKind

# Each engine's distributions: the first installs it, the others are builds with CUDA providers.
# torchao is no engine: the python runtime's int8 precisions need it (int8.py), and the one probe
# says so too.
# optimum-intel runs a transformers causal LM's generate in OpenVINO (the generation tune's
# engine=openvino, python/torchperf/generation_model.py).
DISTRIBUTIONS = {"onnxruntime": ("onnxruntime", "onnxruntime-gpu"), "openvino": ("openvino",),
                 "torchao": ("torchao",), "optimum-intel": ("optimum-intel",)}
LABELS = {"onnxruntime": "ONNX Runtime", "openvino": "OpenVINO", "torchao": "torchao",
          "optimum-intel": "optimum-intel"}
# The opset torch.onnx writes by default in torch 2.9+; named so that a cached file says it.
ONNX_OPSET = 18
# ONNX Runtime's int8 (onnxruntime.quantization, shipped in its wheel): static QDQ calibrated on the
# point's inputs, or dynamic (weights int8, activations quantized per call: MatMul and Gemm).
INT8 = ("int8-static", "int8-dynamic")


class EngineError(Exception):
    """A point an engine cannot run, with its error kind: the worker answers it as such."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def installed(version=None):
    """{engine: {"version", "cuda"}} for each engine this Python has; cuda when a build with CUDA
    execution providers is what is installed (onnxruntime-gpu)."""
    if version is None:
        import importlib.metadata as metadata

        def version(name):
            try:
                return metadata.version(name)
            except metadata.PackageNotFoundError:
                return None
    out = {}
    for engine, names in DISTRIBUTIONS.items():
        for i, name in enumerate(names):
            found = version(name)
            if found:
                out[engine] = {"version": found, "cuda": i > 0}
    return out


def cache_dir(environ=os.environ):
    """torchperf's cache folder, as the C++ side finds it (aoti_package.cpp), and its engines/."""
    base = environ.get("TORCHPERF_CACHE_DIR") or (
        os.path.join(environ["XDG_CACHE_HOME"], "torchperf") if environ.get("XDG_CACHE_HOME")
        else os.path.join(environ.get("HOME") or "/tmp", ".cache", "torchperf"))
    return os.path.join(base, "engines")


def model_digest(kind, path):
    """What identifies the model's weights and code: a file's contents, or a built-in's name and
    seed (its definition comes with torchperf, whose version is in the key)."""
    if kind == "builtin":
        return "builtin:" + path
    file = path.split(":", 1)[0] if kind == "python" else path
    digest = hashlib.sha256()
    try:
        with open(file, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        digest.update(path.encode())
    return digest.hexdigest()


def varying_dims(samples):
    """Per input, the dimensions that change across the samples (each a tuple of tensors), with
    the batch (dimension 0) always: the dynamic axes of the conversion."""
    first = samples[0]
    dims = []
    for i, t in enumerate(first):
        if not hasattr(t, "dim") or t.dim() == 0:
            dims.append(set())
            continue
        vary = {0}
        for sample in samples[1:]:
            vary |= {d for d in range(t.dim()) if sample[i].shape[d] != t.shape[d]}
        dims.append(vary)
    return dims


def signature(samples):
    """The inputs as the conversion sees them: dtype and shape, each varying dimension as '?'."""
    dims = varying_dims(samples)
    return ";".join(f"{str(t.dtype).replace('torch.', '')}["
                    + ",".join("?" if d in dims[i] else str(s) for d, s in enumerate(t.shape)) + "]"
                    for i, t in enumerate(samples[0]))


def program_of(kind, path, load_module, samples):
    """The torch.export program the engines convert: the .pt2 itself, else the module exported
    with every varying dimension dynamic (torch.export's Dim.AUTO: dynamic where the model lets
    it be, static where it specialises)."""
    import torch

    if kind == "program":
        return _child.export_load(path)
    module = load_module()
    inputs = samples[0]
    auto = torch.export.Dim.AUTO
    dynamic = tuple({d: auto for d in dims} or None for dims in varying_dims(samples))
    with torch.no_grad():
        return torch.export.export(module, tuple(inputs), dynamic_shapes=dynamic)


@contextlib.contextmanager
def quiet_conversion():
    """A conversion says nothing in the caller's process (apply runs it there, issue 84): torch.onnx
    logs the optional operators it skips ("torchvision is not installed"), prints its steps, and
    pytree's deprecations warn; its errors still raise."""
    import io
    import logging
    import warnings

    onnx_log = logging.getLogger("torch.onnx")
    level = onnx_log.level
    onnx_log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        onnx_log.setLevel(level)


def conversion_reason(error):
    """The line of a conversion's error that names what failed: torch.onnx's first lines are
    generic advice in terminal colours, and the failing operator comes in its "Exception summary"
    (issue 84's probe: "No ONNX function found for <OpOverload(op='aten.linalg_eig', ...)>")."""
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    summary = text.split("## Exception summary", 1)
    if len(summary) == 2:
        for line in summary[1].splitlines():
            found = re.match(r"<class '(?:[\w.]+\.)?(\w+)'>: (.*)", line.strip())
            if found:
                reason = f"{found.group(1)}: {found.group(2)}"
                return reason if len(reason) <= 400 else reason[:400] + "..."
    return _child.concise(error)


def _written(path, write):
    """write(partial) then renamed onto path: a reader never sees half a file."""
    partial = f"{path}.partial-{os.getpid()}"
    write(partial)
    os.replace(partial, path)


def converted(engine, kind, path, load_module, samples, folder=None, version="?"):
    """The model converted for `engine` (at `version`, part of the cache's key), cached: (file,
    output structure, seconds spent converting, whether the cache had it). ONNX Runtime's file is torch.onnx's export of the program;
    OpenVINO's is its IR (.xml beside its .bin) from openvino.convert_model of the program."""
    import torch
    import torch.utils._pytree as pytree

    folder = folder or cache_dir()
    key = hashlib.sha256("|".join([
        engine, version, torch.__version__, model_digest(kind, path), signature(samples),
        str(ONNX_OPSET)]).encode()).hexdigest()[:24]
    os.makedirs(folder, exist_ok=True)
    file = os.path.join(folder, f"{key}.{'onnx' if engine == 'onnxruntime' else 'xml'}")
    spec_file = os.path.join(folder, f"{key}.out_spec.json")
    if os.path.exists(file) and os.path.exists(spec_file):
        with open(spec_file) as f:
            return file, pytree.treespec_loads(json.load(f)["out_spec"]), 0.0, True
    started = time.perf_counter()
    try:
        program = program_of(kind, path, load_module, samples)
    except Exception as e:
        raise EngineError(ErrorKind.COMPILE, f"{LABELS[engine]}: torch.export could not export "
                                             f"the model to convert it ({_child.concise(e)})")
    try:
        with quiet_conversion():
            if engine == "onnxruntime":
                onnx = torch.onnx.export(program, tuple(samples[0]), dynamo=True, optimize=True,
                                         opset_version=ONNX_OPSET, verbose=False)
            else:
                import openvino as ov

                ir = ov.convert_model(program)
        if engine == "onnxruntime":
            _written(file, lambda p: onnx.save(p + ".onnx") or os.replace(p + ".onnx", p))
        else:
            import openvino as ov

            # Saved in fp32: save_model's default compresses weights to fp16.
            _written(file, lambda p: ov.save_model(ir, p + ".xml", compress_to_fp16=False) or
                     os.replace(p + ".bin", file[:-4] + ".bin") or os.replace(p + ".xml", p))
    except Exception as e:
        raise EngineError(ErrorKind.COMPILE, f"{LABELS[engine]}: converting the program failed "
                                             f"({conversion_reason(e)})")
    _written(spec_file, lambda p: open(p, "w").write(json.dumps(
        {"out_spec": pytree.treespec_dumps(program.call_spec.out_spec)})))
    return file, program.call_spec.out_spec, time.perf_counter() - started, False


def _vnni():
    """Whether the CPU has VNNI (int8 dot products): without it u8s8 products can saturate, and
    ONNX Runtime's guidance is to quantize weights to 7 bits (reduce_range)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return "avx512_vnni" in flags or "avx_vnni" in flags or "amx_int8" in flags


def samples_digest(samples):
    """What identifies a calibration: every sample's bytes."""
    digest = hashlib.sha256()
    for sample in samples:
        for t in sample:
            digest.update(str((t.dtype, tuple(t.shape))).encode())
            digest.update(t.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def quantized(file, precision, samples):
    """ONNX Runtime's int8 of the converted file, cached beside it: (file, seconds spent, whether
    the cache had it). int8-static is calibrated on `samples` (the point's own inputs and stream),
    every activation in QDQ pairs and the weights per channel; int8-dynamic quantizes MatMul and
    Gemm weights, its activations per call."""
    if precision not in INT8:
        raise EngineError(ErrorKind.CONFIG, f"precision={precision}: ONNX Runtime runs fp32, "
                                            f"{' or '.join(INT8)}")
    reduce = not _vnni()
    key = hashlib.sha256("|".join([os.path.basename(file), precision, str(reduce)] + (
        [samples_digest(samples)] if precision == "int8-static" else [])).encode()).hexdigest()[:24]
    out = os.path.join(os.path.dirname(file), f"{key}.{precision}.onnx")
    if os.path.exists(out):
        return out, 0.0, True
    started = time.perf_counter()
    try:
        from onnxruntime import quantization as q
    except ImportError as e:
        raise EngineError(ErrorKind.CONFIG, f"precision={precision}: onnxruntime.quantization "
                                            f"does not import ({_child.concise(e)})")

    class Samples(q.CalibrationDataReader):
        def __init__(self, names):
            self.batches = iter([{n: t.detach().cpu().contiguous().numpy()
                                  for n, t in zip(names, sample)} for sample in samples])

        def get_next(self):
            return next(self.batches, None)

    try:
        if precision == "int8-static":
            import onnx

            names = [i.name for i in onnx.load(file, load_external_data=False).graph.input]
            write = lambda p: q.quantize_static(  # noqa: E731
                file, p, Samples(names), quant_format=q.QuantFormat.QDQ, per_channel=True,
                reduce_range=reduce, activation_type=q.QuantType.QUInt8,
                weight_type=q.QuantType.QInt8, calibrate_method=q.CalibrationMethod.MinMax)
        else:
            write = lambda p: q.quantize_dynamic(  # noqa: E731
                file, p, weight_type=q.QuantType.QInt8, reduce_range=reduce)
        _written(out, lambda p: write(p + ".onnx") or os.replace(p + ".onnx", p))
    except Exception as e:
        raise EngineError(ErrorKind.COMPILE, f"precision={precision}: ONNX Runtime's quantization "
                                             f"failed ({_child.concise(e)})")
    return out, time.perf_counter() - started, False


def ort_call(graph, file, threads, device):
    """A callable running ONNX Runtime's session of `file` under graph's options on torch tensors:
    on a CPU each input is handed over as a view of its memory and each output taken back as one
    (numpy's buffers, no copy)."""
    import onnxruntime as ort
    import torch

    options = BY_GRAPH[graph]
    session_options = ort.SessionOptions()
    session_options.graph_optimization_level = {
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC}[options.level]
    if threads > 0:
        session_options.intra_op_num_threads = threads
        session_options.inter_op_num_threads = threads if options.parallel else 1
    session_options.execution_mode = (ort.ExecutionMode.ORT_PARALLEL if options.parallel
                                      else ort.ExecutionMode.ORT_SEQUENTIAL)
    session_options.enable_cpu_mem_arena = options.arena
    provider = "CUDAExecutionProvider" if device.type == "cuda" else "CPUExecutionProvider"
    if provider not in ort.get_available_providers():
        raise EngineError(ErrorKind.CONFIG, f"ONNX Runtime {ort.__version__} has no {provider} "
                                            f"(it has {', '.join(ort.get_available_providers())})")
    try:
        session = ort.InferenceSession(file, session_options, providers=[provider])
    except Exception as e:
        raise EngineError(ErrorKind.COMPILE, f"ONNX Runtime could not load the converted model "
                                             f"({_child.concise(e)})")
    names = [i.name for i in session.get_inputs()]
    outputs = [o.name for o in session.get_outputs()]
    run = session.run
    if device.type == "cuda":
        # A device's tensors go through the host: ONNX Runtime's own copies, as its Python API
        # makes them without IO binding.
        def call(*inputs):
            return [torch.from_numpy(o).to(device) for o in
                    run(outputs, {n: t.detach().cpu().numpy() for n, t in zip(names, inputs)})]
        return call, len(names)

    def call(*inputs):
        return [torch.from_numpy(o) for o in
                run(outputs, {n: t.detach().contiguous().numpy() for n, t in zip(names, inputs)})]
    return call, len(names)


def openvino_call(graph, file, threads, device):
    """A callable running OpenVINO's compiled IR under graph's hint on torch tensors, in fp32 (its
    default on a CPU with bf16 would be bf16), the inputs shared with it rather than copied. A
    graph of static shapes compiles the IR again for each set of input shapes it meets, once."""
    import openvino as ov
    import torch

    if device.type != "cpu":
        raise EngineError(ErrorKind.CONFIG, f"OpenVINO runs on CPUs here, not on {device}")
    config = {"PERFORMANCE_HINT": BY_GRAPH[graph].hint, "INFERENCE_PRECISION_HINT": "f32"}
    if threads > 0:
        config["INFERENCE_NUM_THREADS"] = threads
    core = ov.Core()

    def compiled_for(shapes):
        try:
            model = core.read_model(file)
            if shapes is not None:
                model.reshape({port: list(shape) for port, shape in zip(model.inputs, shapes)})
            compiled = core.compile_model(model, "CPU", config)
        except Exception as e:
            raise EngineError(ErrorKind.COMPILE, f"OpenVINO could not compile the converted model"
                                                 f"{'' if shapes is None else f' for {shapes}'} "
                                                 f"({_child.concise(e)})")
        return compiled.create_infer_request(), list(compiled.outputs), len(compiled.inputs)

    if not BY_GRAPH[graph].static_shapes:
        request, outputs, count = compiled_for(None)

        def call(*inputs):
            result = request.infer([t.detach().contiguous().numpy() for t in inputs],
                                   share_inputs=True)
            return [torch.from_numpy(result[o]) for o in outputs]
        return call, count

    count = len(core.read_model(file).inputs)
    by_shapes = {}

    def call(*inputs):
        shapes = tuple(tuple(t.shape) for t in inputs)
        if shapes not in by_shapes:
            by_shapes[shapes] = compiled_for(shapes)[:2]
        request, outputs = by_shapes[shapes]
        result = request.infer([t.detach().contiguous().numpy() for t in inputs], share_inputs=True)
        return [torch.from_numpy(result[o]) for o in outputs]
    return call, count


def prepared(graph, kind, path, load_module, samples, threads, device, folder=None,
             precision="fp32", calibration=None):
    """The callable a point of `graph` times (positional torch tensors in, the model's own output
    structure out), the seconds its conversion (and int8 quantization) took (0 when cached) and
    whether it was cached. The conversion's dynamic axes are what varies across `samples`; int8
    is calibrated on `calibration` (batches of real samples), else on `samples`."""
    import torch.utils._pytree as pytree

    if graph not in BY_GRAPH:
        raise EngineError(ErrorKind.CONFIG, f"graph '{graph}': no engine runs it (expected "
                                            f"{', '.join(BY_GRAPH)})")
    engine = BY_GRAPH[graph].engine
    found = installed()  # package metadata, read once per point
    if engine not in found:
        raise EngineError(ErrorKind.CONFIG, f"{LABELS[engine]} is not installed in {sys.executable} "
                                            "(pip install 'torchperf[engines]')")
    # OpenVINO's int8 is ONNX Runtime's QDQ file, which OpenVINO reads and runs in int8 kernels.
    source = engine if precision == "fp32" else "onnxruntime"
    if precision != "fp32" and engine == "openvino":
        if precision != "int8-static":
            raise EngineError(ErrorKind.CONFIG, f"precision={precision}: OpenVINO's int8 here is "
                                                "int8-static (ONNX Runtime's QDQ file, run in int8)")
        if source not in found:
            raise EngineError(ErrorKind.CONFIG, "precision=int8-static: OpenVINO's int8 is ONNX "
                                                "Runtime's quantization of the model, and "
                                                f"onnxruntime is not installed in {sys.executable}")
    file, out_spec, convert_s, cached = converted(source, kind, path, load_module, samples, folder,
                                                  found[source]["version"])
    if precision != "fp32":
        file, quantize_s, quantize_cached = quantized(file, precision, calibration or samples)
        convert_s, cached = convert_s + quantize_s, cached and quantize_cached
    make = ort_call if engine == "onnxruntime" else openvino_call
    run, count = make(graph, file, threads, device)
    if count != len(samples[0]):
        raise EngineError(ErrorKind.COMPILE,
                          f"{LABELS[engine]}: the converted model takes {count} inputs where the "
                          f"model takes {len(samples[0])} (an input it does not use, or one that "
                          "is not a tensor, was dropped in conversion)")
    unflatten = pytree.tree_unflatten

    def call(*inputs):
        return unflatten(run(*inputs), out_spec)
    return call, convert_s, cached


def main():
    parser = argparse.ArgumentParser(prog="torchperf.engines")
    parser.add_argument("--installed", action="store_true",
                        help="answer the engines this Python has, with their versions")
    args = parser.parse_args()
    if not args.installed:
        _child.fail(_child.USAGE, "expected --installed")
    _child.answer(engines=installed())


if __name__ == "__main__":
    main()

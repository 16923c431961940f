"""How a configuration of the python runtime is applied to a module: one definition, used by the
worker when it measures a point (worker.py) and by the API when it hands the winner back
(apply.py), so that what is applied is what was measured.
"""

from torchperf import compile_modes


class SettingsError(ValueError):
    """A value this runtime does not know; the worker answers it as a configuration error."""


# precision -> the dtype weights and floating inputs are converted to (None: kept in fp32).
# int8 (int8.py) quantizes the model itself: its inputs stay fp32.
CONVERTED = {"fp32": None, "bf16-autocast": None, "fp16-autocast": None, "bf16": "bfloat16",
             "fp16": "float16", "int8-static": None, "int8-weight-only": None,
             "int8-dynamic-activation": None}


def converted_dtype(precision):
    """The dtype `precision` converts weights and floating inputs to, or None (fp32, autocast)."""
    import torch

    if precision not in CONVERTED:
        raise SettingsError(f"precision '{precision}': expected {', '.join(CONVERTED)}")
    name = CONVERTED[precision]
    return getattr(torch, name) if name else None


def place(model, inputs, device, memory_format, precision="fp32"):
    """The module and inputs on `device`, in `memory_format` (contiguous | channels_last: 4-D
    weights and inputs converted together) and, for precision bf16 | fp16, in that dtype (weights
    and floating inputs converted together, as the C++ runtime does)."""
    import torch

    if memory_format not in ("contiguous", "channels_last"):
        raise SettingsError(f"format '{memory_format}': expected contiguous or channels_last")
    dtype = converted_dtype(precision)
    channels_last = memory_format == "channels_last"
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
        if dtype is not None:
            model = model.to(dtype)
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
    return model, tuple(place_input(t, device, memory_format, dtype) for t in inputs)


def place_input(tensor, device, memory_format, dtype=None):
    import torch

    tensor = tensor.to(device)
    if dtype is not None and tensor.is_floating_point():
        tensor = tensor.to(dtype)
    if memory_format == "channels_last" and tensor.dim() == 4:
        tensor = tensor.contiguous(memory_format=torch.channels_last)
    return tensor


def set_backends(cudnn_benchmark="n/a", tf32="n/a"):
    """cuDNN's benchmark (off | on) and TF32 math (default | off | on), process-wide flags set
    once before the first call, as the C++ runtime sets them; n/a leaves PyTorch's own."""
    import torch

    if cudnn_benchmark not in ("n/a", "off", "on"):
        raise SettingsError(f"cudnn_benchmark '{cudnn_benchmark}': expected off or on")
    if tf32 not in ("n/a", "default", "off", "on"):
        raise SettingsError(f"tf32 '{tf32}': expected default, off or on")
    if cudnn_benchmark != "n/a":
        torch.backends.cudnn.benchmark = cudnn_benchmark == "on"
    if tf32 in ("off", "on"):
        torch.backends.cuda.matmul.allow_tf32 = tf32 == "on"
        torch.backends.cudnn.allow_tf32 = tf32 == "on"


def package_call(runner, example_inputs):
    """An AOTInductor package (what aoti_load_package returns) as a callable without the per-call
    cost of its own __call__, which parses its call spec from JSON and flattens its inputs on every
    call: about 10 us, half of a small MLP's call (bench section 20: 1.7x the same package through
    __call__). The spec is read once; when the example inputs are its positional tensors, each call
    hands them to the loader as they are and rebuilds the outputs from the spec read once. Anything
    else (keyword inputs, non-tensor leaves, a torch whose loader differs) keeps the runner."""
    import torch
    import torch.utils._pytree as pytree

    loader = getattr(runner, "loader", None)
    if not all(hasattr(loader, name) for name in ("get_call_spec", "boxed_run")):
        return runner
    try:
        in_spec, out_spec = (pytree.treespec_loads(s) for s in loader.get_call_spec())
        leaves, spec = pytree.tree_flatten((tuple(example_inputs), {}))
    except Exception:  # a spec this torch cannot read back: the runner reads it its own way
        return runner
    if spec != in_spec or not leaves or not all(torch.is_tensor(t) for t in leaves):
        return runner
    boxed_run, unflatten = loader.boxed_run, pytree.tree_unflatten

    def call(*inputs):
        return unflatten(boxed_run(list(inputs)), out_spec)
    return call


def call_function(fn, grad, precision, device, memory_format="contiguous"):
    """`fn` as the caller runs it: each call under autograd's mode and autocast, floating inputs
    converted to the point's dtype and format, outputs back in fp32. The one callable both the
    worker times and apply returns, so that what apply hands back is what was measured. Each step
    is there only when the setting needs it: a plain fp32 inference call adds the inference-mode
    guard alone (its C++ guard, a fraction of a microsecond, not the Python context manager)."""
    import torch

    if memory_format not in ("contiguous", "channels_last"):
        raise SettingsError(f"format '{memory_format}': expected contiguous or channels_last")
    dtype = converted_dtype(precision)
    if grad == "inference":
        guard = lambda: torch._C._InferenceMode(True)  # noqa: E731
    elif grad == "no_grad":
        guard = torch.no_grad
    elif grad == "on":
        guard = None
    else:
        raise SettingsError(f"grad '{grad}': expected on, no_grad or inference")
    autocast = None
    if precision in ("bf16-autocast", "fp16-autocast"):
        autocast_dtype = torch.bfloat16 if precision == "bf16-autocast" else torch.float16
        autocast = lambda: torch.autocast(device.type, dtype=autocast_dtype)  # noqa: E731
    channels_last = memory_format == "channels_last"
    convert = dtype is not None or channels_last

    def prepared(inputs):
        return tuple(place_input(t, device, memory_format, dtype) if torch.is_tensor(t) else t
                     for t in inputs)

    def finished(out):
        if torch.is_tensor(out):
            return out.float() if out.is_floating_point() else out
        return type(out)(finished(o) for o in out) if isinstance(out, (list, tuple)) else out

    def body(*inputs):
        if convert:
            inputs = prepared(inputs)
        if autocast is not None:
            with autocast():
                out = fn(*inputs)
        else:
            out = fn(*inputs)
        return finished(out) if dtype is not None else out

    if guard is None:
        return body
    if not convert and autocast is None and dtype is None:
        def call(*inputs):
            with guard():
                return fn(*inputs)
        return call

    def guarded(*inputs):
        with guard():
            return body(*inputs)
    return guarded


# graph value -> torch.compile's mode (None: its default), from the one table (compile_modes.py).
# reduce-overhead and max-autotune replay CUDA graphs on CUDA; the C++ side offers the CUDA-only
# ones only on CUDA.
COMPILE_MODES = compile_modes.INFERENCE


def compiled(model, graph, grad):
    """The callable for `graph`: the module itself (eager), or torch.compile's in one of its
    modes (COMPILE_MODES), with Inductor's freezing when nothing needs the weights' grad."""
    if graph == "eager":
        return model
    if graph not in COMPILE_MODES:
        raise SettingsError(f"graph '{graph}': expected eager or one of "
                            f"{', '.join(COMPILE_MODES)} under the python runtime")
    import torch
    import torch._dynamo
    import torch._inductor.config as inductor_config

    # Freezing folds the weights in as constants: only sound when nothing needs their grad. It is
    # Inductor's process-wide setting, read when a graph compiles.
    inductor_config.freezing = grad != "on"
    # torch.compile's own default for shapes, as a user writes it: dynamic=False read 0.88x of it
    # per call on a 55 µs MLP (its guards cost more), and one shape compiles static either way.
    # compile-dynamic and compile-static set it where a dimension varies (docs/shapes.md).
    return torch.compile(model, mode=COMPILE_MODES[graph], dynamic=compile_modes.DYNAMIC[graph])

"""How a configuration of the python runtime is applied to a module: one definition, used by the
worker when it measures a point (worker.py) and by the API when it hands the winner back
(apply.py), so that what is applied is what was measured.
"""

import contextlib


class SettingsError(ValueError):
    """A value this runtime does not know; the worker answers it as a configuration error."""


def place(model, inputs, device, memory_format):
    """The module and inputs on `device`, in `memory_format` (contiguous | channels_last: 4-D
    weights and inputs converted together)."""
    import torch

    if memory_format not in ("contiguous", "channels_last"):
        raise SettingsError(f"format '{memory_format}': expected contiguous or channels_last")
    channels_last = memory_format == "channels_last"
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
    return model, tuple(place_input(t, device, memory_format) for t in inputs)


def place_input(tensor, device, memory_format):
    import torch

    tensor = tensor.to(device)
    if memory_format == "channels_last" and tensor.dim() == 4:
        tensor = tensor.contiguous(memory_format=torch.channels_last)
    return tensor


def enter_call_contexts(stack, grad, precision, device_type):
    """Enters, on `stack`, autograd's mode (on | no_grad | inference) and autocast
    (fp32 | bf16-autocast | fp16-autocast) around calls."""
    import torch

    if grad == "inference":
        stack.enter_context(torch.inference_mode())
    elif grad == "no_grad":
        stack.enter_context(torch.no_grad())
    elif grad != "on":
        raise SettingsError(f"grad '{grad}': expected on, no_grad or inference")
    if precision in ("bf16-autocast", "fp16-autocast"):
        dtype = torch.bfloat16 if precision == "bf16-autocast" else torch.float16
        stack.enter_context(torch.autocast(device_type, dtype=dtype))
    elif precision != "fp32":
        raise SettingsError(f"precision '{precision}': expected fp32, bf16-autocast or "
                            "fp16-autocast")
    return stack


def call_contexts(grad, precision, device_type):
    """The same contexts as a fresh ExitStack, entered (the caller closes it)."""
    return enter_call_contexts(contextlib.ExitStack(), grad, precision, device_type)


def compiled(model, graph, grad):
    """The callable for `graph`: the module itself (eager), or torch.compile's (compile |
    compile-max-autotune) with Inductor's freezing when nothing needs the weights' grad."""
    if graph == "eager":
        return model
    if graph not in ("compile", "compile-max-autotune"):
        raise SettingsError(f"graph '{graph}': expected eager, compile or compile-max-autotune "
                            "under the python runtime")
    import torch
    import torch._dynamo
    import torch._inductor.config as inductor_config

    # Freezing folds the weights in as constants: only sound when nothing needs their grad. It is
    # Inductor's process-wide setting, read when a graph compiles.
    inductor_config.freezing = grad != "on"
    mode = "max-autotune" if graph == "compile-max-autotune" else None
    return torch.compile(model, mode=mode, dynamic=False)

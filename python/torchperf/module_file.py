"""The caller's own nn.Module in a file, for the worker that measures the python runtime: the
Python API saves the module it was given (pickled with torch.save, beside the folders its classes
import from), so that a tune started from Python times the module the caller runs, not the
exported program's module (whose input checks and pytree calls cost microseconds per call).
"""

import io
import sys


class ModuleFileError(ValueError):
    """The module cannot travel to another process (a class defined in __main__ or in a
    function), or its file does not load there."""


def why_not_portable(model):
    """None when `model` can be pickled and loaded again in a fresh process, else why not."""
    for name, sub in model.named_modules():
        cls = type(sub)
        where = f"'{name}' ({cls.__qualname__})" if name else f"the model ({cls.__qualname__})"
        if cls.__module__ == "__main__":
            return f"{where} is defined in __main__, which another process cannot import"
        if "<locals>" in cls.__qualname__:
            return f"{where} is defined inside a function"
        found = sys.modules.get(cls.__module__)
        for part in cls.__qualname__.split("."):
            found = getattr(found, part, None)
        if found is not cls:
            return (f"{where} cannot be imported as {cls.__module__}.{cls.__qualname__} "
                    "(made by exec, or replaced since)")
    return None


def save(model, path):
    """Writes `model` to `path` with the import folders it needs; ModuleFileError (and nothing
    written) when it cannot be pickled."""
    import torch

    why = why_not_portable(model)
    if why:
        raise ModuleFileError(why)
    pickled = io.BytesIO()
    try:
        torch.save(model, pickled)
    except Exception as e:  # a lambda, a lock, an open file held by the module
        raise ModuleFileError(f"torch.save could not pickle it ({type(e).__name__}: "
                              f"{(str(e).splitlines() or [''])[0]})") from None
    paths = [p for p in sys.path if p]
    partial = f"{path}.partial"
    torch.save({"sys_path": paths, "module": pickled.getvalue()}, partial)
    import os

    os.replace(partial, path)


def load(path):
    """The module saved by save(), its import folders added to sys.path first; ModuleFileError
    naming the file and the reason otherwise."""
    import torch

    try:
        saved = torch.load(path, weights_only=False)
        for folder in saved["sys_path"]:
            if folder not in sys.path:
                sys.path.append(folder)
        model = torch.load(io.BytesIO(saved["module"]), weights_only=False)
    except Exception as e:
        raise ModuleFileError(f"module file '{path}': the saved nn.Module did not load "
                              f"({type(e).__name__}: {(str(e).splitlines() or [''])[0]})") from None
    if not isinstance(model, torch.nn.Module):
        raise ModuleFileError(f"module file '{path}': holds {type(model).__name__}, not an nn.Module")
    return model.eval()

"""What every child module shares: its exit codes and the one-line JSON answer the C++ side reads."""

import contextlib
import json
import os
import sys

from torchperf.error_kinds import ErrorKind

# Exit codes from the error table (error_kinds.py), which the C++ side reads back into its errors
# (src/models/python_side.cpp).
OK = 0
USAGE = ErrorKind.USAGE.exit_code  # the arguments are wrong (a bug on the C++ side, or a typo)
BAD_PROGRAM = ErrorKind.MODEL.exit_code  # not a torch.export program (corrupt, a package, ...)
REJECTED_INPUTS = ErrorKind.WORKLOAD.exit_code  # the model raised on the inputs it was given
COMPILE_FAILED = ErrorKind.COMPILE.exit_code  # AOTInductor refused the program (no compiler, ...)
OUT_OF_MEMORY = ErrorKind.RESOURCE_LIMIT.exit_code  # an allocation failed compiling or running
BAD_SOURCE = ErrorKind.COMPILE.exit_code  # MODULE:CALLABLE cannot be imported, called or exported


def answer(**fields):
    """The one line of JSON on stdout that the C++ side parses."""
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def fail(code, message):
    """One line on stderr (the C++ side quotes its last line), then exit with code."""
    sys.stderr.write(" ".join(str(message).split()) + "\n")
    sys.stderr.flush()
    sys.exit(code)


# Sentences PyTorch appends to a cause that say nothing about this file.
BOILERPLATE = (" This is an internal miniz error.",)


def concise(error):
    """The first line of an exception's text, which is the part a user can act on, without the
    terminal colours some libraries put in it (torch.onnx's)."""
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip().splitlines()
    first = text[0] if text else ""
    # A first line that announces what follows ("... exported input tree spec:") needs it.
    if first.rstrip().endswith(":") and len(text) > 1:
        first = " ".join(" ".join(text).split())
        first = first if len(first) <= 400 else first[:400] + "..."
    for tail in BOILERPLATE:
        first = first.split(tail)[0]
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def export_load(path):
    """torch.export.load(path), raising its real cause: on a damaged archive (weights missing, a
    newer schema) it logs the cause and raises "check the warnings above", which a user reading
    one line never sees."""
    import logging

    import torch

    logged = []

    class Keep(logging.Handler):
        def emit(self, record):
            if record.exc_info and record.exc_info[1] is not None:
                logged.append(record.exc_info[1])

    logger = logging.getLogger("torch.export")
    handler = Keep(level=logging.WARNING)
    logger.addHandler(handler)
    try:
        return torch.export.load(path)
    except Exception as e:
        cause = logged[-1] if logged else e
        missing = unregistered_operator(cause)
        if missing:
            raise MissingOperatorError(
                f"it calls the operator {missing}, which this process does not have: a "
                "torch.library operator registered in the process that exported it, which "
                "torchperf's processes load the program without; a program calling custom "
                "operators cannot be measured yet") from e
        if logged:
            raise logged[-1] from e
        raise
    finally:
        logger.removeHandler(handler)


class MissingOperatorError(RuntimeError):
    """A program calls an operator this process has not registered (a torch.library op)."""


def unregistered_operator(error):
    """"mylib::twice" when a program's load failed on a node calling an operator this process
    does not have (torch.export's SerializeError dumps the whole node, issue 84's probe)."""
    import re

    text = str(error)
    found = re.search(r"Failed deserializing node Node\(target='torch\.ops\.(\w+)\.(\w+)", text)
    if not found:
        return None
    namespace, op = found.groups()
    try:
        import torch

        getattr(getattr(torch.ops, namespace), op)
        return None  # it is here: the node failed for another reason
    except (AttributeError, RuntimeError):
        return f"{namespace}::{op}"


def describe_tensors(tensors):
    """"float32[5, 32], int64[5, 128]": inputs as an error names them."""
    return ", ".join(f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}" for t in tensors)


def flatten(value):
    """The tensors in a model's output (a tensor, or lists, tuples and dicts of them), in order."""
    import torch

    if torch.is_tensor(value):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in flatten(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in flatten(v)]
    return []


def save_outputs(outputs, path):
    """A model's outputs in the saved-outputs format the C++ side reads (tune's references, the
    worker's finish, the API's guard): floating tensors as fp32, on the CPU, contiguous."""
    import torch

    tensors = [t.detach().float().cpu().contiguous() if t.is_floating_point() else
               t.detach().cpu().contiguous() for t in flatten(outputs)]
    # The reference's format (eager_reference.py): outputs and a FLOP count, unused here.
    torch.save((tensors, 0.0), path)
    return len(tensors)


def is_out_of_memory(error):
    return isinstance(error, MemoryError) or "out of memory" in str(error).lower() or \
        "can't allocate memory" in str(error).lower()


def load_program(path):
    """The ExportedProgram in path, or exit BAD_PROGRAM naming what the file is instead."""
    import torch
    import zipfile

    try:
        names = zipfile.ZipFile(path).namelist()
    except (zipfile.BadZipFile, OSError) as e:
        fail(BAD_PROGRAM, f"program '{path}': not a torch.export archive ({concise(e)})")
    if any("/data/aotinductor/" in n for n in names):
        fail(BAD_PROGRAM, f"program '{path}': an AOTInductor package (compiled), not an "
                          "ExportedProgram; pass the file torch.export.save wrote")
    try:
        return export_load(path)
    except Exception as e:  # torch raises many types for a damaged archive
        fail(BAD_PROGRAM, f"program '{path}': torch.export.load failed ({concise(e)})")


@contextlib.contextmanager
def stderr_to(path):
    """What this process writes to its stderr (file descriptor 2: Python's and the libraries'
    alike) goes to `path` meanwhile: torch.export prints its graph there, 75 lines before a one-line
    reason (issue 84), which the caller's error names the file of instead."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(path, "w") as log:
            os.dup2(log.fileno(), 2)
            try:
                yield path
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
    finally:
        os.close(saved)

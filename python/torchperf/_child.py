"""What every child module shares: its exit codes and the one-line JSON answer the C++ side reads."""

import json
import sys

# Exit codes the C++ side maps to its own errors (src/models/python_side.cpp reads them).
OK = 0
USAGE = 2          # the arguments themselves are wrong (a bug on the C++ side, or a user's typo)
BAD_PROGRAM = 4    # the file is not a torch.export program (corrupt, truncated, a package, ...)
REJECTED_INPUTS = 5  # the program (or the user's model) raised on the inputs it was given
COMPILE_FAILED = 6  # AOTInductor refused the program (an unsupported op, no C++ compiler, ...)
OUT_OF_MEMORY = 9   # an allocation failed while compiling or running
BAD_SOURCE = 10     # MODULE:CALLABLE cannot be imported or called, or its model cannot be exported


def answer(**fields):
    """The one line of JSON on stdout that the C++ side parses."""
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def fail(code, message):
    """One line on stderr (the C++ side quotes its last line), then exit with code."""
    sys.stderr.write(" ".join(str(message).split()) + "\n")
    sys.stderr.flush()
    sys.exit(code)


def concise(error):
    """The first line of an exception's text, which is the part a user can act on."""
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


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
        return torch.export.load(path)
    except Exception as e:  # torch raises many types for a damaged archive
        fail(BAD_PROGRAM, f"program '{path}': torch.export.load failed ({concise(e)})")

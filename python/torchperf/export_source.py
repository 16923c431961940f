"""Exports a user's model from Python source to a torch.export program (.pt2), so that a user
never writes export code:

    python -m torchperf.export_source MODULE:CALLABLE INPUTS OUT [--static-batch]

MODULE is imported as Python imports it (the working folder is on the path); CALLABLE is an
nn.Module class or a function that returns an nn.Module, called with no arguments, or an
nn.Module instance. The model is put in eval mode and exported with INPUTS (a torch.save tuple
of example tensors, made by torchperf from --input at batch 2: export specialises a size of 1)
and a dynamic batch dimension shared by every input, unless --static-batch. Prints
{"program": OUT, "dynamic_batch": bool}.

With --explain (OUT is then ignored) nothing is exported: torch._dynamo.explain traces the model
as torch.compile would and prints {"graphs": N, "graph_breaks": N, "breaks": [{"reason",
"hint", "where"}]}, for lint.
"""

import argparse
import importlib
import os
import sys

from torchperf import _child, feed


def load_callable(reference):
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        _child.fail(_child.BAD_SOURCE,
                    f"--from-python '{reference}': expected MODULE:CALLABLE (e.g. mymodels:Net)")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        _child.fail(_child.BAD_SOURCE, f"--from-python '{reference}': importing '{module_name}' "
                                       f"failed ({_child.concise(e)})")
    target = module
    for part in attr.split("."):
        if not hasattr(target, part):
            _child.fail(_child.BAD_SOURCE,
                        f"--from-python '{reference}': module '{module_name}' has no '{attr}'")
        target = getattr(target, part)
    return target


def build_model(reference, target):
    import torch

    if isinstance(target, torch.nn.Module):
        return target
    if not callable(target):
        _child.fail(_child.BAD_SOURCE, f"--from-python '{reference}': not an nn.Module, a class or "
                                       "a function that returns one")
    # Seeded: a model whose weights are drawn at construction is the same program each time it is
    # exported, so its compiled packages are found in the cache again.
    torch.manual_seed(0)
    try:
        model = target()
    except Exception as e:
        _child.fail(_child.BAD_SOURCE, f"--from-python '{reference}': calling it with no "
                                       f"arguments failed ({_child.concise(e)})")
    if not isinstance(model, torch.nn.Module):
        _child.fail(_child.BAD_SOURCE, f"--from-python '{reference}': returned "
                                       f"{type(model).__name__}, expected an nn.Module")
    return model


def where(reason):
    """The user's line a break happened on: the innermost frame of its user stack."""
    stack = getattr(reason, "user_stack", None) or []
    if not stack:
        return ""
    frame = stack[-1]
    return f"{os.path.basename(frame.filename)}:{frame.lineno}"


def explain(model, inputs):
    import torch

    torch._dynamo.reset()
    with torch.no_grad():
        result = torch._dynamo.explain(model)(*inputs)
    breaks = []
    for r in result.break_reasons:
        # Dynamo's reason reads "WHAT Explanation: WHY Hint: WHAT TO DO ...": the first and last.
        text = " ".join(str(r.reason).split())
        reason, _, rest = text.partition(" Explanation: ")
        hint = rest.partition(" Hint: ")[2].partition(" Developer debug context")[0]
        breaks.append({"reason": reason[:300], "hint": hint[:300], "where": where(r)})
    _child.answer(graphs=int(result.graph_count), graph_breaks=int(result.graph_break_count),
                  breaks=breaks[:20])


def example_length(low, high):
    """A size within [low, high] to export a varying dimension at: not 2 (the example's batch:
    torch.export would take two dimensions of one size for one symbol) and not 1 (specialised)."""
    for size in (17, low, high):
        if low <= size <= high and size > 2:
            return size
    return high


def dynamic_shapes(inputs, named=None, static_batch=False):
    """torch.export's dynamic_shapes: dimension 0 of every input one shared batch (unless
    static_batch), and each named dimension a Dim of its own, shared by name across inputs.
    named holds, per input, {dimension: (name, low, high)} (the batch counted as dimension 0)."""
    import torch

    batch = None if static_batch else torch.export.Dim("batch", min=1, max=65536)
    dims = {}
    shapes = []
    for i, t in enumerate(inputs):
        spec = {0: batch} if batch is not None and t.dim() > 0 else {}
        for d, (name, low, high) in ((named[i] if named and i < len(named) else {}) or {}).items():
            if name not in dims:
                # Dim's min below 2 is refused or specialised by torch.export: 2 is where it starts.
                dims[name] = torch.export.Dim(name, min=max(2, low), max=max(high, 3))
            spec[d] = dims[name]
        shapes.append(spec or None)
    return tuple(shapes) if any(shapes) else None


def export_program(model, inputs, out, static_batch=False, named=None):
    """Exports `model` (in eval mode, its inputs with a batch of at least 2) to `out` with a
    dynamic batch dimension shared by every input, unless static_batch, and each named dimension
    dynamic over its range (dynamic_shapes' named); returns whether the batch is dynamic.
    torch.export's own exception propagates. Shared with the Python API."""
    import torch

    dynamic = dynamic_shapes(inputs, named, static_batch)
    program = torch.export.export(model, tuple(inputs), dynamic_shapes=dynamic)
    # Written aside and renamed: a reader never sees half a program.
    partial = out + f".partial-{os.getpid()}.pt2"
    torch.export.save(program, partial)
    os.replace(partial, out)
    return not static_batch


def main():
    parser = argparse.ArgumentParser(prog="torchperf.export_source")
    parser.add_argument("callable")
    parser.add_argument("inputs")
    parser.add_argument("out")
    parser.add_argument("--static-batch", action="store_true")
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--feed", default="",
                        help="what the model is fed, typed as the core resolves it (feed.py): the "
                             "arguments its inputs name, its named dimensions, exported dynamic")
    args = parser.parse_args()

    import torch

    model = build_model(args.callable, load_callable(args.callable)).eval()
    inputs = tuple(torch.load(args.inputs))
    try:
        given = feed.load(args.feed) if args.feed else None
        order = feed.forward_order(model, given) if given else list(range(len(inputs)))
    except ValueError as e:
        _child.fail(_child.REJECTED_INPUTS, f"--from-python '{args.callable}': {e}")
    inputs = tuple(inputs[i] for i in order)
    try:
        with torch.no_grad():
            model(*inputs)
    except Exception as e:
        if _child.is_out_of_memory(e):
            _child.fail(_child.OUT_OF_MEMORY, f"out of memory running the model ({_child.concise(e)})")
        shapes = _child.describe_tensors(inputs)
        _child.fail(_child.REJECTED_INPUTS, f"--from-python '{args.callable}': the model rejected "
                                            f"its inputs ({shapes}): {_child.concise(e)}")
    if args.explain:
        try:
            explain(model, inputs)
        except Exception as e:
            _child.fail(_child.BAD_SOURCE, f"--from-python '{args.callable}': torch._dynamo.explain "
                                           f"failed ({_child.concise(e)})")
        return
    try:
        named = feed.named_dimensions(given) if given else None
        if named:
            named = [named[i] for i in order]
        dynamic = export_program(model, inputs, args.out, static_batch=args.static_batch,
                                 named=named)
    except Exception as e:
        _child.fail(_child.BAD_SOURCE, f"--from-python '{args.callable}': torch.export failed "
                                       f"({_child.concise(e)})")
    _child.answer(program=args.out, dynamic_batch=dynamic)


if __name__ == "__main__":
    main()

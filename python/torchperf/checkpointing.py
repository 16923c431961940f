"""Activation checkpointing for the Python training step (the `checkpoint` knob): which blocks of
a model are recomputed in backward instead of keeping their activations, and how many bytes of
activations a forward keeps, so that the C++ ladder can tell which batch fits a memory cap before
it tries one.

    off        nothing recomputed
    blocks     each repeated block: the children of the model's longest ModuleList or Sequential
               whose children are all of one type (a transformer's layers, a ResNet stage)
    every:N    every N-th of those blocks (the first, the N+1-th, ...)
    budget:F   under torch.compile: the compiler's activation memory budget (0 < F <= 1), its
               min-cut partitioner choosing what to recompute
"""

import copy

from torchperf.error_kinds import ErrorKind
from torchperf.worker import JobError


def parse(value):
    """(kind, number): ("off", 0), ("blocks", 1), ("every", N), ("budget", F)."""
    if value in ("off", "blocks"):
        return value, 1
    kind, _, number = value.partition(":")
    try:
        if kind == "every" and int(number) >= 1:
            return kind, int(number)
        if kind == "budget" and 0 < float(number) <= 1:
            return kind, float(number)
    except ValueError:
        pass
    raise JobError(ErrorKind.CONFIG, f"checkpoint '{value}': expected off, blocks, every:N (N >= 1) "
                                     "or budget:F (0 < F <= 1)")


def repeated_blocks(model):
    """(name, container) of the longest ModuleList or Sequential whose children (two or more) are
    all of one type, or (None, None)."""
    from torch import nn

    best_name, best = None, None
    for name, module in model.named_modules():
        if not isinstance(module, (nn.ModuleList, nn.Sequential)):
            continue
        children = list(module.children())
        if len(children) < 2 or len({type(c) for c in children}) != 1:
            continue
        if best is None or len(children) > len(list(best.children())):
            best_name, best = name, module
    return best_name, best


def _checkpointed(block):
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    class Checkpointed(nn.Module):
        """The block, its activations recomputed in backward (non-reentrant: PyTorch's advice)."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args, **kwargs):
            if not self.training:
                return self.inner(*args, **kwargs)
            return checkpoint(self.inner, *args, use_reentrant=False, **kwargs)

    return Checkpointed(block)


def apply(model, value, compiled):
    """Wraps the model's repeated blocks as value says (in place); returns how many were wrapped
    (0 for off and budget). budget:F sets the compiler's activation memory budget and needs a
    compiled step."""
    kind, number = parse(value)
    if kind == "off":
        return 0
    if kind == "budget":
        if not compiled:
            raise JobError(ErrorKind.CONFIG, f"checkpoint={value}: the activation memory budget is "
                                             "torch.compile's (step=compile); in eager use blocks "
                                             "or every:N")
        import torch._functorch.config as functorch_config

        functorch_config.activation_memory_budget = number
        return 0
    name, container = repeated_blocks(model)
    if container is None:
        raise JobError(ErrorKind.CONFIG, f"checkpoint={value}: the model has no ModuleList or "
                                         "Sequential of repeated blocks to recompute")
    wrapped = 0
    for i, (child_name, child) in enumerate(list(container.named_children())):
        if i % number == 0:
            setattr(container, child_name, _checkpointed(child))
            wrapped += 1
    return wrapped


def checkpointed_peak_bytes(model, inputs, plain_bytes):
    """The activations a checkpointed step holds at its peak: every block's input, and during
    backward one block recomputed with its gradients (twice a block's share of the rest); -1
    where the model has no repeated blocks."""
    _, container = repeated_blocks(model)
    if container is None:
        return -1
    kept = saved_activation_bytes(model, inputs, "blocks")
    blocks = len(list(container.children()))
    return kept + 2 * max(0, plain_bytes - kept) // blocks


def saved_activation_bytes(model, inputs, checkpoint_value="off"):
    """Bytes of the tensors autograd keeps for backward over one forward of inputs (each storage
    counted once), with checkpoint_value applied to a copy of the model; the graph is dropped
    unused. -1 where checkpoint_value does not apply to the model."""
    import torch

    if checkpoint_value != "off":
        try:
            model = copy.deepcopy(model)
            apply(model, checkpoint_value, compiled=False)
        except JobError:
            return -1
    # Weights (and views of them, as a Linear saves its weight transposed) are not activations.
    seen = {(p.untyped_storage().data_ptr(), p.device) for p in model.parameters()}
    total = 0

    def pack(tensor):
        nonlocal total
        if isinstance(tensor, torch.Tensor):
            key = (tensor.untyped_storage().data_ptr(), tensor.device)
            if key not in seen:
                seen.add(key)
                total += tensor.untyped_storage().nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(inputs)
    del out
    return total

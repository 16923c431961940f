"""int8 through PyTorch's maintained paths (issue 61), one definition for the worker's points
(worker.py) and apply's winner (apply.py): PT2E static quantization with torchao's
X86InductorQuantizer, calibrated on the point's own inputs and lowered to int8 kernels by Inductor
with freezing; and torchao's quantize_ with its int8 weight-only and dynamic-activation configs,
which replace nn.Linear weights. The old `int8-dynamic` (torch.ao's TorchScript path) stays C++'s.
"""

import pydoc
import time

from torchperf import _child
from torchperf.error_kinds import ErrorKind

# precision value -> what it is, for messages and the report.
PRECISIONS = {
    "int8-static": "PT2E static int8 (X86InductorQuantizer, calibrated)",
    "int8-weight-only": "torchao Int8WeightOnlyConfig",
    "int8-dynamic-activation": "torchao Int8DynamicActivationInt8WeightConfig",
}


class Int8Error(Exception):
    """A model this int8 path cannot quantize, with its error kind."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def split_shared_module_calls(graph_module):
    """torch.export (non-strict) records a node's module by its path alone, so a module called
    twice (ResNet's one ReLU per block, called after each convolution) reads as one partition
    with two outputs, which X86InductorQuantizer refuses ("Input partition has more than one output
    node"). Each call of such a module gets a source of its own, as a strict export records it.
    A module whose nodes are not each used outside it (one call of several operators) is left."""
    groups = {}
    for node in graph_module.graph.nodes:
        stack = node.meta.get("nn_module_stack")
        if node.op != "call_function" or not stack or node.meta.get("source_fn_stack"):
            continue
        fqn, kind = list(stack.values())[-1]
        groups.setdefault(fqn, []).append((node, kind))
    split = 0
    for fqn, members in groups.items():
        nodes = {n for n, _ in members}
        kind = members[0][1]
        kind = pydoc.locate(kind) if isinstance(kind, str) else kind
        # torch.nn's own modules only (what the quantizer's patterns name): the model's own
        # modules keep their operators' sources (operator.add found through torch_fn).
        if len(members) < 2 or not isinstance(kind, type) or \
                not kind.__module__.startswith("torch.nn.") or \
                not all(any(u not in nodes for u in n.users) for n in nodes):
            continue
        for i, (node, _) in enumerate(members):
            node.meta["source_fn_stack"] = [(f"{fqn}.call{i}", kind)]
            split += 1
    return split


def _varying(batches):
    """Per input, torch.export's dynamic shapes: Dim.AUTO on the batch and on each dimension that
    changes across the calibration batches (a --dim stream's lengths), static elsewhere. The batch
    is dynamic where the model lets it be, so that apply's model (calibrated on one example batch)
    takes any batch, and the worker measures that same model."""
    import torch

    from torchperf import engines

    auto = torch.export.Dim.AUTO
    return tuple({d: auto for d in ds} or None for ds in engines.varying_dims(batches))


def static(model, batches, shapes=None):
    """PT2E: the model exported, annotated by X86InductorQuantizer, calibrated on every batch,
    converted. Inductor (with freezing) lowers its quantize/dequantize pairs to int8 kernels.
    `shapes` (the point's own inputs and stream; default `batches`) are what it is exported on:
    calibration samples of one length must not pin a length the point's stream varies."""
    shapes = list(shapes or batches)
    import torch

    try:
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
        from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as x86
    except ImportError as e:
        raise Int8Error(ErrorKind.CONFIG, "precision=int8-static: this torchao has no PT2E "
                                          f"X86InductorQuantizer ({_child.concise(e)}; "
                                          "requirements.txt pins torchao==0.18.0)") from None
    try:
        with torch.no_grad():
            exported = torch.export.export(model, tuple(shapes[0]),
                                           dynamic_shapes=_varying(shapes + list(batches))).module()
    except Exception as e:
        raise Int8Error(ErrorKind.COMPILE, "precision=int8-static: torch.export could not export "
                                           f"the model for PT2E ({_child.concise(e)})") from None
    try:
        split_shared_module_calls(exported)
        quantizer = x86.X86InductorQuantizer()
        quantizer.set_global(x86.get_default_x86_inductor_quantization_config())
        prepared = prepare_pt2e(exported, quantizer)
        with torch.no_grad():
            for batch in batches:
                prepared(*batch)
        return convert_pt2e(prepared)
    except Exception as e:
        raise Int8Error(ErrorKind.COMPILE, "precision=int8-static: X86InductorQuantizer could not "
                                           f"quantize the model ({_child.concise(e)})") from None


def weights(model, precision):
    """torchao's quantize_ on the model's nn.Linear layers, in place."""
    import torch

    try:
        from torchao.quantization import (Int8DynamicActivationInt8WeightConfig,
                                          Int8WeightOnlyConfig, quantize_)
    except ImportError as e:
        raise Int8Error(ErrorKind.CONFIG, f"precision={precision}: this torchao lacks its int8 "
                                          f"configs ({_child.concise(e)}; requirements.txt pins "
                                          "torchao==0.18.0)") from None

    if not any(isinstance(m, torch.nn.Linear) for m in model.modules()):
        raise Int8Error(ErrorKind.CONFIG, f"precision={precision}: torchao's quantize_ replaces "
                                          "nn.Linear weights and this model has none (a torch.export "
                                          "program holds its weights as constants: tune the module, "
                                          "with --from-python or torchperf.tune(module))")
    config = (Int8WeightOnlyConfig() if precision == "int8-weight-only"
              else Int8DynamicActivationInt8WeightConfig())
    try:
        quantize_(model, config)
    except Exception as e:
        raise Int8Error(ErrorKind.COMPILE, f"precision={precision}: torchao's quantize_ failed "
                                           f"({_child.concise(e)})") from None
    return model


def calibration_batches(samples, batch):
    """The calibration file's samples (a tuple of tensors sharing their first dimension, as
    --calibration FILE or tune(calibration=...) gives them) in batches of `batch` rows, the batch
    the point runs (a static program takes no other): every sample is used, the last batch (or
    the only one, from fewer samples than a batch) filled up with the first samples again, which
    leaves the ranges calibration records as they are."""
    import torch

    rows = samples[0].shape[0]
    if batch <= 0 or rows == batch:
        return [tuple(samples)]
    out = []
    for start in range(0, rows, batch):
        index = torch.tensor([(start + j) % rows for j in range(batch)])
        out.append(tuple(t.index_select(0, index) for t in samples))
    return out


def quantized(model, precision, batches, device, shapes=None):
    """(the model in `precision`'s int8, seconds spent): `batches` (tuples of tensors, the point's
    inputs and its stream's, or the calibration file's) calibrate int8-static, exported on
    `shapes` (default `batches`). Int8Error for what cannot be quantized."""
    if precision not in PRECISIONS:
        raise Int8Error(ErrorKind.CONFIG, f"precision '{precision}': expected one of "
                                          f"{', '.join(PRECISIONS)}")
    import platform

    if precision == "int8-static" and (getattr(device, "type", str(device)) != "cpu" or
                                       platform.machine().lower() not in ("x86_64", "amd64")):
        raise Int8Error(ErrorKind.CONFIG, "precision=int8-static: X86InductorQuantizer's kernels "
                                          "run on x86 CPUs only")
    import logging

    # torchao's import warns of each CUDA extension this build cannot load: noise on a CPU.
    logging.getLogger("torchao").setLevel(logging.ERROR)
    try:
        import torchao  # noqa: F401
    except ImportError:
        raise Int8Error(ErrorKind.CONFIG, f"precision={precision} needs torchao, which is not "
                                          "installed in the Python worker's Python (pip install "
                                          "'torchperf[engines]')") from None
    started = time.perf_counter()
    try:
        model = model.eval()
    except NotImplementedError:  # a torch.export program's module has no train/eval switch
        pass
    out = static(model, batches, shapes) if precision == "int8-static" else weights(model, precision)
    return out, time.perf_counter() - started

"""Compiles a torch.export program into an AOTInductor package (torch._inductor.aoti_compile_and_package).

    python -m torchperf.aoti_compile PROGRAM PACKAGE --precision fp32|bf16 [--max-autotune]

The package is written beside PACKAGE and renamed into place only when whole, so a killed compile
leaves no half-written entry in torchperf's cache. Prints {"compile_s": ..., "cpu_isa": ...}.

Options each knob value implies: freezing always (an inference package: weights become constants
that Inductor folds and lays out for its kernels); max-autotune benchmarks kernel choices while
compiling; precision=bf16 casts the program (weights and inputs) and exports it again. Exporting
under torch.autocast does not work on a loaded program: 2.13's export traces below the autocast
key and drops it (measured: the graph keeps fp32 linear), so bf16 is a cast, not autocast.
"""

import argparse
import os
import time

from torchperf import _child


def cast_program(ep, dtype, device):
    """The program with its floating weights, buffers and inputs in dtype on device, exported
    again."""
    import torch

    module = ep.module().to(device=device, dtype=dtype)
    args, kwargs = ep.example_inputs or ((), {})
    args = tuple(a.to(device=device, dtype=dtype if a.is_floating_point() else a.dtype)
                 if torch.is_tensor(a) else a for a in args)
    # The dynamic dimensions the program was exported with carry over through its range
    # constraints: re-export with the same symbols' ranges on the same dimensions.
    dynamic = _dynamic_shapes(ep, args)
    return torch.export.export(module, args, kwargs, dynamic_shapes=dynamic)


def _dynamic_shapes(ep, args):
    import torch

    specs = [s for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    shapes, dims = [], {}
    for spec in specs:
        node = placeholders.get(spec.arg.name)
        value = node.meta.get("val") if node is not None else None
        entry = {}
        if value is not None and hasattr(value, "shape"):
            for i, size in enumerate(value.shape):
                if isinstance(size, torch.SymInt):
                    name = str(size.node.expr)
                    rng = ep.range_constraints.get(size.node.expr)
                    if name not in dims:
                        low = max(int(rng.lower), 1) if rng is not None else 1
                        high = int(rng.upper) if rng is not None and rng.upper.is_finite else None
                        dims[name] = torch.export.Dim(f"d_{name}", min=low, max=high)
                    entry[i] = dims[name]
        shapes.append(entry or None)
    return tuple(shapes) if len(shapes) == len(args) else None


def main():
    parser = argparse.ArgumentParser(prog="torchperf.aoti_compile")
    parser.add_argument("program")
    parser.add_argument("package")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--max-autotune", action="store_true")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    ep = _child.load_program(args.program)
    import torch

    start = time.perf_counter()
    try:
        if args.precision == "bf16" or args.device != "cpu":
            dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
            ep = cast_program(ep, dtype, torch.device(args.device))
        options = {"freezing": True, "max_autotune": bool(args.max_autotune)}
        partial = args.package + f".partial-{os.getpid()}.pt2"
        torch._inductor.aoti_compile_and_package(ep, package_path=partial,
                                                 inductor_configs=options)
        os.replace(partial, args.package)
    except Exception as e:
        if _child.is_out_of_memory(e):
            _child.fail(_child.OUT_OF_MEMORY, f"out of memory while compiling ({_child.concise(e)})")
        _child.fail(_child.COMPILE_FAILED, f"AOTInductor compile failed: {_child.concise(e)}")
    from torch._inductor import cpu_vec_isa

    _child.answer(compile_s=time.perf_counter() - start, cpu_isa=str(cpu_vec_isa.pick_vec_isa()),
                  torch_version=torch.__version__)


if __name__ == "__main__":
    main()

"""Runs a torch.export program eagerly (ep.module(), fp32, no_grad) for the output guard's reference.

    python -m torchperf.eager_reference PROGRAM INPUTS OUT [--flops]

INPUTS is a torch.save file (the C++ side writes it with torch::pickle_save) holding the tuple of
input tensors; OUT receives (outputs, flops_per_call) in the same format: a tuple of a list of
tensors and a float, which torch::pickle_load reads. FLOPs come from torch.utils.flop_counter,
PyTorch's own count, on the same call.
"""

import argparse

from torchperf import _child


def main():
    parser = argparse.ArgumentParser(prog="torchperf.eager_reference")
    parser.add_argument("program")
    parser.add_argument("inputs")
    parser.add_argument("out")
    parser.add_argument("--flops", action="store_true")
    args = parser.parse_args()

    ep = _child.load_program(args.program)
    import torch

    inputs = torch.load(args.inputs)
    module = ep.module()
    try:
        with torch.no_grad():
            if args.flops:
                from torch.utils.flop_counter import FlopCounterMode

                counter = FlopCounterMode(display=False)
                with counter:
                    outputs = module(*inputs)
                flops = int(counter.get_total_flops())
            else:
                outputs = module(*inputs)
                flops = 0
    except Exception as e:
        if _child.is_out_of_memory(e):
            _child.fail(_child.OUT_OF_MEMORY, f"out of memory running the program ({_child.concise(e)})")
        shapes = _child.describe_tensors(inputs)
        _child.fail(_child.REJECTED_INPUTS, f"model '{args.program}' rejected its inputs ({shapes}): {_child.concise(e)}")
    tensors = [t.detach().float().contiguous() if t.is_floating_point() else t.detach().contiguous()
               for t in _child.flatten(outputs)]
    # The count as a float: LibTorch's unpickler reads a Python int above 2**31 (a long of 5 bytes)
    # as an error ("Expected length to be 8, got 5"); a double holds counts to 2**53 exactly.
    torch.save((tensors, float(flops)), args.out)
    _child.answer(outputs=len(tensors), flops=flops)


if __name__ == "__main__":
    main()

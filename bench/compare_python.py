#!/usr/bin/env python3
"""Times a TorchScript file with PyTorch's own torch.utils.benchmark, the way a careful Python
user would, and prints samples/s as JSON. bench/run.sh runs it beside torchperf on the same file,
inputs file, configuration and thread count, and prints the ratio.

usage: compare_python.py MODEL.pt INPUTS.pt THREADS SECONDS GRAD GRAPH [PRECISION]
  GRAD: no_grad | inference;  GRAPH: eager | frozen | frozen-opt (freeze + optimize_for_inference)
  PRECISION: fp32 (default) | int8-dynamic: PyTorch's own dynamic quantization of the TorchScript
  file, torch.ao.quantization.quantize_dynamic_jit with per_channel_dynamic_qconfig (its result
  is already frozen: GRAPH must be frozen)"""
import json
import sys
import time

import torch
import torch.utils.benchmark as benchmark


def main(path, inputs_path, threads, seconds, grad, graph, precision="fp32"):
    torch.set_num_threads(threads)  # once, before anything is timed, as torchperf does
    model = torch.jit.load(path).eval()
    if precision == "int8-dynamic":
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic_jit
        assert graph == "frozen", "quantize_dynamic_jit freezes the model itself"
        model = quantize_dynamic_jit(model, {"": per_channel_dynamic_qconfig})
    elif graph == "frozen":
        model = torch.jit.freeze(model)
    elif graph == "frozen-opt":
        model = torch.jit.optimize_for_inference(torch.jit.freeze(model))
    inputs = torch.load(inputs_path)
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    guard = "torch.inference_mode()" if grad == "inference" else "torch.no_grad()"
    # Warm up as torchperf does: for up to the same budget as the measurement (torchperf stops
    # earlier once the per-call time settles; a fast model here keeps speeding up for seconds).
    with torch.inference_mode() if grad == "inference" else torch.no_grad():
        start = time.perf_counter()
        calls = 0
        while calls < 3 or time.perf_counter() - start < seconds:
            model(*inputs)
            calls += 1
    timer = benchmark.Timer(stmt=f"with {guard}:\n    model(*inputs)",
                            globals={"model": model, "inputs": inputs, "torch": torch},
                            num_threads=threads)
    m = timer.blocked_autorange(min_run_time=seconds)
    batch = inputs[0].shape[0]
    print(json.dumps({"median_s": m.median, "iqr_s": m.iqr, "runs": len(m.times),
                      "samples_per_s": batch / m.median, "torch": torch.__version__}))


if __name__ == "__main__":
    path, inputs_path, threads, seconds, grad, graph = sys.argv[1:7]
    main(path, inputs_path, int(threads), float(seconds), grad, graph, *sys.argv[7:8])

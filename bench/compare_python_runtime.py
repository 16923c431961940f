#!/usr/bin/env python3
"""Times a torch.export program run by PyTorch in Python, eager or under torch.compile, with
torch.utils.benchmark, and prints samples/s as JSON: the peer of `torchperf bench --runtime python`
on the same program, batch, thread count and grad mode (inference_mode).

usage: compare_python_runtime.py PROGRAM.pt2 BATCH INPUT_SHAPE THREADS SECONDS GRAPH
  INPUT_SHAPE: the shape without the batch, e.g. 3x224x224; GRAPH: eager | compile"""
import json
import sys
import time

import torch
import torch._inductor.config
import torch.utils.benchmark as benchmark


def main(program, batch, shape, threads, seconds, graph):
    torch.set_num_threads(threads)  # once, before anything is timed, as torchperf does
    model = torch.export.load(program).module()
    if graph == "compile":
        torch._inductor.config.freezing = True  # as torchperf's worker does for inference
        model = torch.compile(model)
    dims = [batch] + [int(d) for d in shape.split("x")]
    torch.manual_seed(0)
    x = torch.randn(*dims)
    with torch.inference_mode():
        started = time.perf_counter()
        model(x)  # the compile, under torch.compile
        compile_s = time.perf_counter() - started
        # Warm up for up to the measurement's budget, as torchperf does.
        start = time.perf_counter()
        calls = 0
        while calls < 3 or time.perf_counter() - start < seconds:
            model(x)
            calls += 1
        timer = benchmark.Timer(stmt="model(x)", globals={"model": model, "x": x},
                                num_threads=threads)
        m = timer.blocked_autorange(min_run_time=seconds)
    print(json.dumps({"median_s": m.median, "iqr_s": m.iqr, "runs": len(m.times),
                      "samples_per_s": batch / m.median, "first_call_s": compile_s,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    program, batch, shape, threads, seconds, graph = sys.argv[1:7]
    main(program, int(batch), shape, int(threads), float(seconds), graph)

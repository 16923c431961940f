#!/usr/bin/env python3
"""Times an AOTInductor package run from Python (torch._inductor.aoti_load_package) with PyTorch's
torch.utils.benchmark, and prints samples/s as JSON: the peer of `torchperf bench --graph aoti` on
the same package (the one torchperf compiled and cached), inputs and thread count.

usage: compare_aoti_python.py PACKAGE.pt2 BATCH INPUT_SHAPE THREADS SECONDS [DTYPE]
  INPUT_SHAPE: the shape without the batch, e.g. 3x224x224; DTYPE: float32 (default) | bfloat16"""
import json
import sys
import time

import torch
import torch.utils.benchmark as benchmark


def main(package, batch, shape, threads, seconds, dtype="float32"):
    torch.set_num_threads(threads)  # once, before anything is timed, as torchperf does
    runner = torch._inductor.aoti_load_package(package)
    dims = [batch] + [int(d) for d in shape.split("x")]
    torch.manual_seed(0)
    x = torch.randn(*dims).to(getattr(torch, dtype))
    # Warm up for up to the measurement's budget, as torchperf does.
    start = time.perf_counter()
    calls = 0
    while calls < 3 or time.perf_counter() - start < seconds:
        runner(x)
        calls += 1
    timer = benchmark.Timer(stmt="runner(x)", globals={"runner": runner, "x": x},
                            num_threads=threads)
    m = timer.blocked_autorange(min_run_time=seconds)
    print(json.dumps({"median_s": m.median, "iqr_s": m.iqr, "runs": len(m.times),
                      "samples_per_s": batch / m.median, "torch": torch.__version__}))


if __name__ == "__main__":
    package, batch, shape, threads, seconds = sys.argv[1:6]
    main(package, int(batch), shape, int(threads), float(seconds), *sys.argv[6:7])

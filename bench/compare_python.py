#!/usr/bin/python3
"""Times a TorchScript file with PyTorch's own torch.utils.benchmark, the way a careful Python
user would (eval, no_grad), and prints samples/s as JSON. bench/run.sh runs it beside torchperf on
the same file, configuration and threads, and prints the ratio."""
import json
import sys

import torch
import torch.utils.benchmark as benchmark


def main(path, shape, batch, threads, seconds):
    torch.set_num_threads(threads)
    model = torch.jit.load(path).eval()
    x = torch.randn(batch, *shape)
    with torch.no_grad():
        for _ in range(3):  # the profiling executor optimises after its first runs
            model(x)
    timer = benchmark.Timer(stmt="with torch.no_grad():\n    model(x)",
                            globals={"model": model, "x": x, "torch": torch}, num_threads=threads)
    m = timer.blocked_autorange(min_run_time=seconds)
    print(json.dumps({"median_s": m.median, "iqr_s": m.iqr, "runs": len(m.times),
                      "samples_per_s": batch / m.median, "torch": torch.__version__}))


if __name__ == "__main__":
    path, shape, batch, threads, seconds = sys.argv[1:6]
    main(path, [int(d) for d in shape.split("x")], int(batch), int(threads), float(seconds))

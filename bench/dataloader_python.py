#!/usr/bin/env python3
"""The training input pipeline of bench/loader_throughput.cpp, written the way a PyTorch user
would: a Dataset of 50 000 random 32x32 RGB images, each resized (bilinear) and normalised in
__getitem__, batched by torch.utils.data.DataLoader. Prints images/s as one JSON line; bench/run.sh
runs it beside torchperf_bench_loader with the same arguments and prints the ratio.

Threads are left at PyTorch's defaults, as on the C++ side: with num_workers=0 batches are made in
the main process with the default intra-op threads; each worker process runs one intra-op thread
(the DataLoader calls torch.set_num_threads(1) in every worker)."""
import argparse
import json
import time

import os
import sys

from torch.utils.data import DataLoader

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from torchperf.training_data import SyntheticCifar  # noqa: E402  (one definition, shared)


def batches(loader):
    # Epoch after epoch, as BatchLoader.next() does.
    while True:
        yield from loader


def main(workers, batch, image_size, timed, warmup):
    extra = {"prefetch_factor": 2, "persistent_workers": True} if workers > 0 else {}
    loader = DataLoader(SyntheticCifar(image_size), batch_size=batch, shuffle=True,
                        num_workers=workers, drop_last=True, **extra)
    it = batches(loader)
    for _ in range(warmup):  # untimed: includes starting the workers
        next(it)
    images = 0
    start = time.perf_counter()
    for _ in range(timed):
        inputs, _labels = next(it)
        images += inputs.shape[0]
    seconds = time.perf_counter() - start
    print(json.dumps({"impl": "python", "workers": workers, "batch": batch, "images": images,
                      "seconds": seconds, "images_per_s": images / seconds}))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--batches", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    a = p.parse_args()
    main(a.workers, a.batch, a.image_size, a.batches, a.warmup)

#!/usr/bin/env python3
"""A DDP training loop tuned by hand, as a careful person writes it from the guides (seed 001):
DistributedDataParallel with 25 MB buckets and gradient_as_bucket_view, gradient accumulation
with the all-reduce skipped by no_sync() on all but the last micro-batch, a DistributedSampler,
set_to_none gradients, the loader's workers as given. Run under torch's launcher:

    python -m torch.distributed.run --standalone --nproc-per-node 2 bench/ddp_hand.py \\
        --data tensors:FILE --batch 32 --accumulate 4 --workers 0 --steps 20 --warmup 3

Rank 0 prints one JSON line: samples/s over the timed steps, every rank's samples over the
slowest rank's time (the step ends when the last rank's does)."""
import argparse
import contextlib
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from torchperf import builtin_models  # noqa: E402  (the built-in's own definition)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp")
    p.add_argument("--data", required=True)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--accumulate", type=int, default=4)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--bucket-mb", type=int, default=25)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ["LOCAL_WORLD_SIZE"])))
    inputs, targets = torch.load(a.data.split(":", 1)[1])
    dataset = TensorDataset(inputs, targets)
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, drop_last=True)
    extra = {"persistent_workers": True} if a.workers else {}
    loader = DataLoader(dataset, batch_size=a.batch, sampler=sampler, num_workers=a.workers,
                        drop_last=True, **extra)
    model = DDP(builtin_models.build(a.model, 0).train(), bucket_cap_mb=a.bucket_mb,
                gradient_as_bucket_view=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def batches():
        epoch = 0
        while True:
            sampler.set_epoch(epoch)
            yield from loader
            epoch += 1

    data = batches()

    def step():
        for micro in range(a.accumulate):
            x, y = next(data)
            sync = micro == a.accumulate - 1
            with contextlib.nullcontext() if sync else model.no_sync():
                loss = F.cross_entropy(model(x), y) / a.accumulate
                loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    for _ in range(a.warmup):
        step()
    begin = time.perf_counter()
    for _ in range(a.steps):
        step()
    elapsed = torch.tensor([time.perf_counter() - begin], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    if rank == 0:
        samples = a.steps * a.accumulate * a.batch * world
        print(json.dumps({"samples_per_s": samples / elapsed.item()}), flush=True)
    dist.barrier()  # no rank closes its connections while another still uses them
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

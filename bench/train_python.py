#!/usr/bin/env python3
"""A training loop written the way a PyTorch user would, with the settings of `torchperf train`'s
knobs, timed as torchperf times its steps. Prints samples/s as one JSON line; bench/run.sh runs it
beside `torchperf train` on the same model, data, threads and allocator settings.

The step is torchperf's: next batch, copy (uint8 batches normalised after it), forward and
cross-entropy under autocast when asked, loss.item() (torchperf reads the loss every step to catch
divergence), backward, SGD (momentum 0.9, lr 0.01) step, zero_grad. samples/s is the samples of the
timed steps over their summed wall time, after untimed warm-up steps."""
import argparse
import json
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset

from dataloader_python import SyntheticCifar


class SyntheticCifarBytes(Dataset):
    """SyntheticCifar resized, then rounded back to bytes: torchperf's transfer=uint8."""

    def __init__(self, size):
        self.floats = SyntheticCifar(size)

    def __len__(self):
        return len(self.floats)

    def __getitem__(self, index):
        x, label = self.floats[index]
        return x.mul_(0.5).add_(0.5).mul_(255).round_().clamp_(0, 255).to(torch.uint8), label


def open_model(spec):
    # torchvision's architectures as the fixtures define them with torch.nn (PyPI's torchvision is
    # a CUDA build that does not import beside the .venv's CPU torch).
    if spec.startswith("torchvision:"):
        import os
        import sys
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
        import fixture_models
        return getattr(fixture_models, spec.split(":", 1)[1])()
    return torch.jit.load(spec)


def open_data(spec, image_size, transfer):
    if spec == "synthetic-cifar":
        return SyntheticCifarBytes(image_size) if transfer == "uint8" else SyntheticCifar(image_size)
    if spec.startswith("tensors:"):
        inputs, targets = torch.load(spec.split(":", 1)[1])
        return TensorDataset(inputs, targets)
    raise SystemExit(f"--data {spec}: expected synthetic-cifar or tensors:FILE")


def batches(loader):
    while True:  # epoch after epoch, as torchperf's BatchLoader does
        yield from loader


def main(a):
    torch.set_num_threads(a.threads)  # once, before anything runs
    model = open_model(a.model).train()
    channels_last = a.format == "channels_last"
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    extra = {"prefetch_factor": 2, "persistent_workers": True} if a.workers > 0 else {}
    loader = DataLoader(open_data(a.data, a.image_size, a.transfer), batch_size=a.batch,
                        shuffle=True, num_workers=a.workers, drop_last=True, **extra)
    it = batches(loader)

    def step():
        inputs, targets = next(it)
        if inputs.dtype == torch.uint8:
            inputs = inputs.float().div_(255).sub_(0.5).div_(0.5)
        if channels_last:
            inputs = inputs.contiguous(memory_format=torch.channels_last)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.amp == "bf16"):
            loss = F.cross_entropy(model(inputs).float(), targets)
        loss.item()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=a.zero_grad == "set_to_none")
        return inputs.shape[0]

    for _ in range(a.warmup):
        step()
    samples = 0
    seconds = 0.0
    for _ in range(a.steps):
        start = time.perf_counter()
        samples += step()
        seconds += time.perf_counter() - start
    print(json.dumps({"impl": "python", "samples_per_s": samples / seconds, "steps": a.steps,
                      "seconds": seconds, "torch": torch.__version__}))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="TorchScript file, or torchvision:NAME (eager)")
    p.add_argument("--data", default="synthetic-cifar")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--transfer", choices=["float32", "uint8"], default="float32")
    p.add_argument("--zero-grad", choices=["zero", "set_to_none"], default="zero")
    p.add_argument("--format", choices=["contiguous", "channels_last"], default="contiguous")
    p.add_argument("--amp", choices=["off", "bf16"], default="off")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    main(p.parse_args())

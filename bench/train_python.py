#!/usr/bin/env python3
"""A training loop written the way a PyTorch user would, with the settings of `torchperf train`'s
knobs, timed as torchperf times its steps. Prints samples/s as one JSON line; bench/run.sh runs it
beside `torchperf train` on the same model, data, threads and allocator settings, and climbs it by
hand (bench section 7): loader workers, pin_memory with non_blocking, uint8 transfer, set_to_none,
AMP, torch.compile.

The step is torchperf's: next batch, copy (uint8 batches normalised after it), forward and
cross-entropy under autocast when asked, loss.item() (torchperf reads the loss every step to catch
divergence), backward (through a GradScaler with fp16), SGD (momentum 0.9, lr 0.01) step,
zero_grad. samples/s is the samples of the timed steps over their summed wall time, after untimed
warm-up steps (the first of which compiles under --compile)."""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from torchperf import training_data  # noqa: E402  (the data torchperf's Python step reads)


def open_model(spec):
    if spec.startswith("builtin:"):  # the built-in's Python definition, as torchperf builds it
        from torchperf import builtin_models
        return builtin_models.build(spec.split(":", 1)[1], 0).train()
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
    try:
        return training_data.open_dataset(spec, image_size, transfer == "uint8")
    except ValueError as e:
        raise SystemExit(str(e))


def batches(loader):
    while True:  # epoch after epoch, as torchperf's BatchLoader does
        yield from loader


def main(a):
    torch.set_num_threads(a.threads)  # once, before anything runs
    device = torch.device(a.device)
    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cudnn.benchmark = a.cudnn_benchmark == "on"
    model = open_model(a.model).train().to(device)
    channels_last = a.format == "channels_last"
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if a.compile != "off":
        model = torch.compile(model, mode=None if a.compile == "default" else a.compile)
    scaler = torch.amp.GradScaler(device.type) if a.amp == "fp16" else None
    dtype = torch.float16 if a.amp == "fp16" else torch.bfloat16
    extra = ({"prefetch_factor": a.prefetch, "persistent_workers": True}
             if a.workers > 0 else {})
    loader = DataLoader(open_data(a.data, a.image_size, a.transfer), batch_size=a.batch,
                        shuffle=True, num_workers=a.workers, drop_last=True,
                        pin_memory=a.pin_memory and cuda, **extra)
    it = batches(loader)
    non_blocking = a.non_blocking and cuda

    def step():
        inputs, targets = next(it)
        inputs = inputs.to(device, non_blocking=non_blocking)
        targets = targets.to(device, non_blocking=non_blocking)
        if inputs.dtype == torch.uint8:
            inputs = training_data.normalise_after_copy(inputs)
        if channels_last:
            inputs = inputs.contiguous(memory_format=torch.channels_last)
        if a.compile == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast(device.type, dtype=dtype, enabled=a.amp != "off"):
            loss = F.cross_entropy(model(inputs).float(), targets)
        loss.item()
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad(set_to_none=a.zero_grad == "set_to_none")
        if cuda:
            torch.cuda.synchronize(device)
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
    p.add_argument("model", help="TorchScript file, builtin:NAME or torchvision:NAME (eager)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--data", default="synthetic-cifar")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--transfer", choices=["float32", "uint8"], default="float32")
    p.add_argument("--zero-grad", choices=["zero", "set_to_none"], default="zero")
    p.add_argument("--format", choices=["contiguous", "channels_last"], default="contiguous")
    p.add_argument("--amp", choices=["off", "bf16", "fp16"], default="off")
    p.add_argument("--prefetch", type=int, default=2)
    p.add_argument("--pin-memory", action="store_true")
    p.add_argument("--non-blocking", action="store_true")
    p.add_argument("--cudnn-benchmark", choices=["off", "on"], default="off")
    p.add_argument("--compile", choices=["off", "default", "reduce-overhead", "max-autotune"],
                   default="off")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    main(p.parse_args())

"""The hand-tuned PyTorch peers of a GPU tune: what a careful person writes in a few lines, timed
with torch.utils.benchmark on the same built-in model (torchperf's own definition, same weights),
batch and device, each peer in a process of its own (cudnn.benchmark and torch.compile are process
state).

    python bench/gpu_peers.py [--model resnet18] [--input 3x224x224] [--batch 64] [--device cuda] [--seconds 5]
                              [--peers NAME,...] [--json OUT]

Prints one line per peer and, with --json, writes them all: samples/s from the median of
blocked_autorange's blocks, its interquartile range, and the first call's time (torch.compile's
compile). Peers: eager-fp32; eager-fp16-cl (fp16 weights, channels_last, cudnn.benchmark,
inference_mode); compile-fp16-cl (torch.compile default); compile-ro-fp16-cl (mode=
"reduce-overhead": CUDA graphs).
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

PEERS = {
    "eager-fp32": dict(half=False, channels_last=False, cudnn_benchmark=False, compile=None),
    "eager-fp16-cl": dict(half=True, channels_last=True, cudnn_benchmark=True, compile=None),
    "compile-fp16-cl": dict(half=True, channels_last=True, cudnn_benchmark=True, compile="default"),
    "compile-ro-fp16-cl": dict(half=True, channels_last=True, cudnn_benchmark=True,
                               compile="reduce-overhead"),
}


def run_peer(name, model_name, spec, batch, device, seconds):
    import torch
    import torch.utils.benchmark as benchmark

    from torchperf import builtin_models, feed

    peer = PEERS[name]
    torch.backends.cudnn.benchmark = peer["cudnn_benchmark"]
    model = builtin_models.build(model_name).to(device)
    inputs = [t.to(device) for t in feed.example_inputs(feed.resolve(spec), batch)]
    if peer["half"]:
        model = model.half()
        inputs = [t.half() if t.is_floating_point() else t for t in inputs]
    if peer["channels_last"]:
        model = model.to(memory_format=torch.channels_last)
        inputs = [t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t
                  for t in inputs]
    fn = model
    if peer["compile"]:
        fn = torch.compile(model, mode=None if peer["compile"] == "default" else peer["compile"])
    with torch.inference_mode():
        start = time.perf_counter()
        fn(*inputs)
        torch.cuda.synchronize() if device.startswith("cuda") else None
        first_call_s = time.perf_counter() - start
        for _ in range(10):
            fn(*inputs)
        timer = benchmark.Timer(stmt="fn(*inputs)", globals={"fn": fn, "inputs": inputs},
                                num_threads=torch.get_num_threads())
        m = timer.blocked_autorange(min_run_time=seconds)
    return {"peer": name, "model": model_name, "batch": batch, "device": device,
            "samples_per_s": batch / m.median, "median_ms": m.median * 1e3,
            "iqr_ms": m.iqr * 1e3, "blocks": len(m.times), "first_call_s": first_call_s,
            "torch": torch.__version__}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--input", default="3x224x224", help="the model's input spec")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--json")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_peer(args.one, args.model, args.input, args.batch, args.device,
                                  args.seconds)))
        return 0
    results = []
    for name in args.peers.split(","):
        if name not in PEERS:
            sys.exit(f"gpu_peers: unknown peer '{name}'; expected one of {', '.join(PEERS)}")
        proc = subprocess.run([sys.executable, __file__, "--one", name, "--model", args.model,
                               "--input", args.input, "--batch", str(args.batch), "--device", args.device,
                               "--seconds", str(args.seconds)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"{name:20s} FAILED (exit {proc.returncode}): {tail}", flush=True)
            results.append({"peer": name, "failed": tail})
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        results.append(r)
        print(f"{name:20s} {r['samples_per_s']:10.1f} samples/s  median {r['median_ms']:.3f} ms "
              f"(IQR {r['iqr_ms']:.3f} ms, {r['blocks']} blocks)  first call {r['first_call_s']:.1f} s",
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

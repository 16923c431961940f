#!/usr/bin/env python3
"""Bench section 22 (issue 53): training at scale on this CPU.

1. DDP: `train --nproc 2 --ladder` on builtin:mlp (784-512-512-10, batch 32 per rank, 4
   accumulation steps, gloo, 2 ranks x 1 thread) against bench/ddp_hand.py, a DDP script tuned
   by hand (25 MB buckets, gradient_as_bucket_view, no_sync while accumulating, set_to_none; its
   loader's workers chosen by measuring 0 and 1), each side in fresh processes under torch's
   launcher, alternated rounds.
2. A memory cap: bench/memory_models.py's SequenceMLP, batch 32, a cap set between what batch 32
   needs and what batch 64 would (from the measured activations). The ladder's checkpointing rung
   (checkpoint=blocks with the larger batch it fits) against the largest batch that fits without
   it, alternated, each in a fresh process under the cap.

    ddp_vs_hand.py TORCHPERF ROUNDS BUDGET OUT [a|b]   (a part alone; both by default)
"""
import json
import math
import os
import subprocess
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
tp, rounds, budget, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
parts = sys.argv[5] if len(sys.argv) > 5 else "ab"
os.makedirs(out, exist_ok=True)
env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(here, "..", "python"), here]))


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, env=env, **kw)
    return r


def train_json(*args):
    r = run([tp, "train", *args, "--quiet", "--json"])
    if r.returncode != 0:
        raise SystemExit(f"torchperf train {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def table(name_a, name_b, a, b):
    print(f"  {'round':<6} {name_a:>24} {name_b:>24} {'ratio':>7}")
    for i, (x, y) in enumerate(zip(a, b), 1):
        print(f"  {i:<6} {x:>24,.0f} {y:>24,.0f} {x / y:>7.3f}")
    ratios = [x / y for x, y in zip(a, b)]
    print(f"  {name_a} over {name_b}: {geomean(ratios):.3f}x ({min(ratios):.3f}-{max(ratios):.3f}), "
          f"{len(ratios)} rounds")


g = torch.Generator().manual_seed(0)


def ddp_part():
    # --- 1. DDP ------------------------------------------------------------------------------------
    vectors = os.path.join(out, "vectors.pt")
    torch.save((torch.randn(8192, 784, generator=g), torch.randint(0, 10, (8192,), generator=g)), vectors)
    data = f"tensors:{vectors}"
    common = ["builtin:mlp", "--data", data, "--nproc", "2", "--batch", "32", "--accumulate", "4"]
    print(f"== 22a. DDP: train --nproc 2 --ladder (budget {budget}) on builtin:mlp, batch 32 x 4 "
          "accumulation steps per rank, gloo, vs a DDP script tuned by hand")
    ladder = train_json(*common, "--ladder", "--budget", budget, "--steps", "10")["ladder"]
    for a in ladder["attempts"]:
        if a.get("failure"):
            print(f"  tried {a['change']}: failed: {a['failure']}")
            continue
        lo, hi = a["speedup"]["ci"]
        print(f"  tried {a['change']}: {a['speedup']['ratio']:.3f}x ({lo:.2f}-{hi:.2f})"
              f"{' kept' if a['kept'] else ''}")
    top = ladder["rungs"][-1]["configuration"]
    first = ladder["rungs"][0]["breakdown"]
    print(f"  the loop as given: exposed all-reduce {first['phases']['all_reduce']['share']:.1%} of the "
          f"step; ladder: {len(ladder['rungs']) - 1} kept, {ladder['rungs'][-1]['cumulative']:.3f}x; "
          f"stopped: {ladder['stop_reason']}")
    print(f"  top rung: {top}")


    def hand(workers, steps=40):
        r = run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                 os.path.join(here, "ddp_hand.py"), "--data", data, "--batch", "32", "--accumulate", "4",
                 "--workers", str(workers), "--steps", str(steps), "--warmup", "3"])
        if r.returncode != 0:
            raise SystemExit(f"ddp_hand.py failed: {r.stderr.strip()[-2000:]}")
        return json.loads(r.stdout.strip().splitlines()[-1])["samples_per_s"]


    def ours(steps=40):
        return train_json(*common, "--config", top, "--steps", str(steps),
                          "--warmup", "3")["breakdown"]["samples_per_second"]


    # The hand script's loader, tuned by hand: workers 0 and 1, twice each, alternated.
    by_workers = {0: [], 1: []}
    for _ in range(2):
        for w in (0, 1):
            by_workers[w].append(hand(w))
    workers = max(by_workers, key=lambda w: geomean(by_workers[w]))
    print(f"  by hand: workers=0 {geomean(by_workers[0]):,.0f}, workers=1 {geomean(by_workers[1]):,.0f} "
          f"samples/s: workers={workers}")
    tp_runs, hand_runs = [], []
    for r in range(rounds):
        if r % 2 == 0:
            tp_runs.append(ours())
            hand_runs.append(hand(workers))
        else:
            hand_runs.append(hand(workers))
            tp_runs.append(ours())
    table("torchperf top rung", "DDP by hand", tp_runs, hand_runs)
    print("  (the issue's target: 0.95 or more)")



def memory_part():
    # --- 2. A memory cap ---------------------------------------------------------------------------
    sequences = os.path.join(out, "sequences.pt")
    torch.save((torch.randn(512, 256, 128, generator=g), torch.randint(0, 10, (512,), generator=g)),
               sequences)
    model = ["--from-python", "memory_models:SequenceMLP", "--data", f"tensors:{sequences}"]
    batch = 32
    probe = train_json(*model, "--batch", str(batch), "--memory-cap", "64G", "--steps", "4")["breakdown"]
    peak, act = probe["peak_memory_bytes"], probe["activation_bytes"]
    # Batch 32 fits, batch 64 (another 32 samples' activations) does not, and the ladder (planning up
    # to 90% of the cap) does not try it.
    cap_mib = int((peak + 0.75 * act) / 2**20)
    print(f"\n== 22b. a memory cap: SequenceMLP (8 residual blocks over 256 positions), batch {batch} peaks at "
          f"{peak / 2**20:.0f} MiB with {act / 2**20:.1f} MiB of activations "
          f"({probe['checkpointed_activation_bytes'] / 2**20:.1f} MiB checkpointed); --memory-cap {cap_mib}M")
    cap = ["--memory-cap", f"{cap_mib}M"]
    r = run([tp, "train", *model, "--batch", str(2 * batch), *cap, "--steps", "3", "--quiet"])
    print(f"  batch {2 * batch} without checkpointing: exit {r.returncode}: "
          f"{r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}")
    ladder = train_json(*model, "--batch", str(batch), *cap, "--ladder", "--allow-semantic-changes",
                        "--budget", budget, "--steps", "4")["ladder"]
    def knobs(text):
        return dict(kv.split("=", 1) for kv in text.split(",") if kv)

    # Each attempt's whole configuration: the top rung when it was tried, with its change.
    checkpointed, rung = [], 0
    for a in ladder["attempts"]:
        verdict = (f"failed: {a['failure']}" if a.get("failure") else
                   f"{a['speedup']['ratio']:.3f}x" + (" kept" if a["kept"] else ""))
        print(f"  tried {a['change']}: {verdict}")
        top = knobs(ladder["rungs"][rung]["configuration"])
        if "checkpoint=blocks" in a["change"] and not a.get("failure"):
            checkpointed.append((a, top, dict(top, **knobs(a["change"]))))
        if a["kept"]:
            rung += 1
    print(f"  top rung: {ladder['rungs'][-1]['configuration']}; peak memory per rung: " +
          ", ".join(f"{r['breakdown']['peak_memory_bytes'] / 2**20:.0f} MiB" for r in ladder["rungs"]))
    if not checkpointed:
        print("  the ladder tried no checkpointing rung")
        return
    _, plain, best = max(checkpointed, key=lambda c: c[0]["speedup"]["ratio"])
    larger = best["batch"]

    def text(config):
        return ",".join(f"{k}={v}" for k, v in config.items())

    print(f"  the checkpointing rung ({text(best)}) against the largest batch that fits without "
          f"it ({text(plain)}), under the cap, alternated:")
    ck_runs, plain_runs = [], []
    for r in range(rounds):
        sides = [("ck", text(best)), ("plain", text(plain))]
        for name, config in (sides if r % 2 == 0 else sides[::-1]):
            s = train_json(*model, *cap, "--config", config, "--steps", "8",
                           "--warmup", "2")["breakdown"]["samples_per_second"]
            (ck_runs if name == "ck" else plain_runs).append(s)
    table(f"batch {larger}, checkpointed", f"batch {batch}, not", ck_runs, plain_runs)


if "a" in parts:
    ddp_part()
if "b" in parts:
    memory_part()

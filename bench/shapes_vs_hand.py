"""make bench, section 21: lengths that vary (issue 52). The built-in encoder over a stream skewed
short (lognormal, median 40 tokens, a tail to 512), batch 16: tune's winner, found within the
budget with its compiles inside it, against (a) padding every batch to 512 in eager fp32, as a
naive user would, and (b) the best of what a careful person writes in Python (sort by length;
then eager at each batch's longest, or buckets with torch.compile dynamic, or one static graph
per bucket; the compiled ones again under bf16 autocast where the CPU has bf16). Every side runs
the same 256 lengths in the same order (a lengths file torchperf replays), each side in its own
process, the sides in alternated order each round; the figure is useful tokens/s (padding
excluded) over the median pass.

    python bench/shapes_vs_hand.py TORCHPERF BUDGET ROUNDS SECONDS OUT
    python bench/shapes_vs_hand.py --side NAME LENGTHS SECONDS   (one hand-written side: JSON)

Prints each side's tokens/s per round, then tune's winner over padding to 512 and over the best
hand-written side of each round (median and range; target >= 1.0).
"""

import json
import math
import os
import statistics
import subprocess
import sys
import time

BATCH, BUCKETS, MAX_LENGTH, VOCAB = 16, (64, 128, 256, 512), 512, 1000
SPEC = "int64:S@0..1000;int64:S@1..2"


def write_lengths(path, count=256, seed=0):
    """Lognormal lengths, median 40, sigma 0.9, redrawn outside 4..512; one a line."""
    import random

    rng = random.Random(seed)
    lengths = []
    while len(lengths) < count:
        n = round(math.exp(math.log(40) + 0.9 * rng.gauss(0, 1)))
        if 4 <= n <= MAX_LENGTH:
            lengths.append(n)
    with open(path, "w") as f:
        f.write("\n".join(map(str, lengths)) + "\n")
    return lengths


def has_bf16():
    flags = open("/proc/cpuinfo").read()
    return "avx512_bf16" in flags or "amx_bf16" in flags


# ---------------------------------------------------------------------------------------------
# One hand-written side, in its own process.

def batches_of(lengths, how):
    """The careful person's batches: (ids, mask, useful tokens) for one pass."""
    import torch

    order = list(range(len(lengths)))
    if how != "pad-max":
        order.sort(key=lambda i: lengths[i])  # the whole window of 256 sorted by length
    out, gen = [], torch.Generator().manual_seed(0)
    for b in range(0, len(order), BATCH):
        members = [lengths[i] for i in order[b:b + BATCH]]
        longest = max(members)
        if how == "pad-max":
            width = MAX_LENGTH
        elif how == "sorted-eager":
            width = longest
        else:
            width = next(e for e in BUCKETS if e >= longest)
        ids = torch.zeros(len(members), width, dtype=torch.long)
        mask = torch.zeros(len(members), width, dtype=torch.long)
        for j, n in enumerate(members):
            ids[j, :n] = torch.randint(0, VOCAB, (n,), generator=gen)
            mask[j, :n] = 1
        out.append((ids, mask, sum(members)))
    return out


def side(name, lengths_path, seconds):
    import contextlib

    import torch

    from torchperf import builtin_models

    lengths = [int(line) for line in open(lengths_path) if line.strip()]
    model = builtin_models.build("encoder", 0)  # torchperf's built-in, its weights
    how = name.replace("-bf16", "")
    batches = batches_of(lengths, "pad-max" if how == "pad-max" else
                         "sorted-eager" if how == "sorted-eager" else "buckets")
    fn = model
    if how == "buckets-compile-dynamic":
        fn = torch.compile(model, dynamic=True)
    elif how == "buckets-compile-static":
        fn = torch.compile(model, dynamic=False)  # one graph per bucket edge
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if name.endswith("-bf16") \
        else contextlib.nullcontext
    tokens = sum(t for _, _, t in batches)

    def one_pass():
        with torch.inference_mode(), autocast():
            for ids, mask, _ in batches:
                fn(ids, mask)

    started = time.perf_counter()
    one_pass()  # every shape met once: compiles, allocations
    warm_s = time.perf_counter() - started
    one_pass()
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        start = time.perf_counter()
        one_pass()
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(json.dumps({"side": name, "tokens_per_s": tokens / median, "passes": len(times),
                      "warm_s": warm_s, "threads": torch.get_num_threads()}))


# ---------------------------------------------------------------------------------------------
# The benchmark.

def torchperf_side(tp, lengths_path, config, seconds):
    run = subprocess.run([tp, "bench", "builtin:encoder", "--input", SPEC, "--dim",
                          f"S=file:{lengths_path}", "--config", config, "--time", str(seconds),
                          "--json", "--quiet"], capture_output=True, text=True)
    if not run.stdout.strip():
        raise SystemExit(f"torchperf bench failed ({run.returncode}): {run.stderr.strip()[-400:]}")
    m = json.loads(run.stdout)["measurement"]
    return m["stream"]["tokens_per_s"]


def hand_side(name, lengths_path, seconds):
    run = subprocess.run([sys.executable, os.path.abspath(__file__), "--side", name, lengths_path,
                          str(seconds)], capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"side {name} failed: {run.stderr.strip()[-600:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])["tokens_per_s"]


def spread(values):
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main():
    if sys.argv[1] == "--side":
        side(sys.argv[2], sys.argv[3], float(sys.argv[4]))
        return
    tp, budget, rounds, seconds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        float(sys.argv[4]), sys.argv[5]
    os.makedirs(out, exist_ok=True)
    lengths_path = os.path.join(out, "lengths.txt")
    lengths = write_lengths(lengths_path)
    print(f"   lengths: {len(lengths)}, median {statistics.median(lengths)}, "
          f"longest {max(lengths)}, batch {BATCH}; bf16 on this CPU: {has_bf16()}")
    started = time.perf_counter()
    tune = subprocess.run([tp, "tune", "builtin:encoder", "--input", SPEC, "--dim",
                           f"S=file:{lengths_path}", "--batch", str(BATCH), "--budget", budget,
                           "--out", os.path.join(out, "tune"), "--json", "--quiet"],
                          capture_output=True, text=True)
    if not tune.stdout.strip():
        raise SystemExit(f"tune failed ({tune.returncode}): {tune.stderr.strip()[-600:]}")
    result = json.loads(tune.stdout)
    winner = result["winner"]
    print(f"   tune ({budget}, {time.perf_counter() - started:.0f} s): winner {winner}")
    hand = ["sorted-eager", "buckets-compile-dynamic", "buckets-compile-static"]
    if has_bf16():
        hand += ["buckets-compile-dynamic-bf16", "buckets-compile-static-bf16"]
    sides = ["torchperf", "pad-max"] + hand
    rows = []
    for r in range(rounds):
        order = sides if r % 2 == 0 else list(reversed(sides))
        row = {}
        for name in order:
            row[name] = (torchperf_side(tp, lengths_path, winner, seconds) if name == "torchperf"
                         else hand_side(name, lengths_path, seconds))
        rows.append(row)
        print(f"   round {r + 1}: " + ", ".join(f"{n} {row[n]:,.0f}" for n in sides) + " tokens/s")
    over_naive = [row["torchperf"] / row["pad-max"] for row in rows]
    over_best = [row["torchperf"] / max(row[n] for n in hand) for row in rows]
    best_names = [max(hand, key=lambda n: row[n]) for row in rows]
    print(f"   tune's winner / padding to 512 in eager fp32: {spread(over_naive)}")
    print(f"   tune's winner / the best hand-written side of each round ({', '.join(best_names)}): "
          f"{spread(over_best)} (target >= 1.0)")
    with open(os.path.join(out, "shapes.json"), "w") as f:
        json.dump({"winner": winner, "rounds": rows, "over_naive": over_naive,
                   "over_best": over_best}, f, indent=1)


if __name__ == "__main__":
    main()

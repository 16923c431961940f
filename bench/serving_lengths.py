"""make bench, section 26: serving text as it arrives (issue 62). The built-in encoder served
under a lognormal length stream (median 40 tokens, a tail to 512), open loop (Poisson): the
bucketed queue serve-tune chooses within its budget against (a) per-length calls, as serve ran
before issue 62 (only requests of one length share a call; its defaults: max batch 8, 2 ms), and
(b) a token-budget queue set as TEI's defaults would set it (one queue, 16,384 padded tokens a
call, at most 8 requests as its CPU backend caps them, no waiting: a batch forms from whatever
waits when the model is free). Every side has the winner's instances and threads, so that only
the queue differs. Each run is its own fresh server process; the sides alternate at each rate of
a ladder around serve-tune's best rate, each climbing until its objective fails.

    python bench/serving_lengths.py TORCHPERF BUDGET ROUNDS OUT

Prints each side's highest rate within the objective per round, the tuned side over each
baseline (median and range; target >= 1.0), and p99 by length quarter at the highest rate
every side held.
"""

import json
import os
import re
import signal
import statistics
import subprocess
import sys

SPEC = "int64:S@0..1000;int64:S@1..2"
DIM = "S=lognormal:40:0.9:4..512"
SLO = "p99=100ms"
# Of serve-tune's best rate; past the last, up 15% a step while a side still holds (to 4x).
LADDER = (0.1, 0.2, 0.3, 0.5, 0.7, 0.85, 1.0, 1.15, 1.3)


def ladder():
    yield from LADDER
    f = LADDER[-1]
    while f < 4:
        f *= 1.15
        yield f
REQUESTS = 4 * 459  # a p99 claim at 99% confidence for the longest quarter


def serve(tp, settings, log):
    """A fresh server on a free port; its process and URL."""
    args = [tp, "serve", "builtin:encoder", "--input", SPEC, "--dim", DIM, "--port", "0",
            "--name", "encoder", *settings]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=open(log, "a"), text=True)
    first = proc.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)", first)
    if not found:
        proc.kill()
        raise SystemExit(f"the server did not start: {first.strip()} (see {log})")
    return proc, f"http://127.0.0.1:{found.group(1)}"


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def load(tp, url, rate, seed):
    duration = max(8.0, 1.25 * REQUESTS / rate)
    run = subprocess.run([tp, "load", url, "--model", "encoder", "--dim", DIM, "--rate",
                          f"{rate:.1f}", "--duration", f"{duration:.1f}s", "--slo", SLO, "--seed",
                          str(seed), "--json", "--quiet"], capture_output=True, text=True)
    if run.returncode not in (0, 3):
        raise SystemExit(f"load failed ({run.returncode}): {run.stderr.strip()}")
    return json.loads(run.stdout)


def tuned_settings(tp, budget, out):
    tune_dir = os.path.join(out, "serve-tune")
    subprocess.run(["rm", "-rf", tune_dir], check=True)
    run = subprocess.run([tp, "serve-tune", "builtin:encoder", "--input", SPEC, "--dim", DIM,
                          "--slo", SLO, "--budget", budget, "--out", tune_dir, "--quiet"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"serve-tune failed ({run.returncode}): {run.stderr.strip()}")
    for line in run.stdout.splitlines():
        if line.startswith(("winner:", "its server was ready")):
            print("  " + line)
    result = json.load(open(os.path.join(tune_dir, "serve-tune.json")))
    w = next(c for c in result["candidates"] if c["winner"])
    common = ["--instances", str(w["instances"]), "--config", f"threads={w['threads']}"]
    tuned = common + ["--max-batch", str(w["max_batch"]), "--max-queue-delay",
                      f"{w['max_queue_delay_s'] * 1e6:g}us"]
    edges = w["buckets"]
    if edges == list(range(1, len(edges) + 1)) and len(edges) > 2:
        tuned += ["--buckets", "per-length"]
    elif edges:
        tuned += ["--buckets", "/".join(map(str, edges))]
    if w["max_tokens"]:
        tuned += ["--max-tokens", str(w["max_tokens"])]
    return w["best_rate"], common, tuned


def main():
    tp, budget, rounds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    os.makedirs(out, exist_ok=True)
    best, common, tuned = tuned_settings(tp, budget, out)
    sides = {
        "serve-tune's queue": tuned,
        "per-length calls": common + ["--buckets", "per-length", "--max-batch", "8",
                                      "--max-queue-delay", "2ms"],
        "TEI-style token budget": common + ["--buckets", "one", "--max-tokens", "16384",
                                            "--max-batch", "8", "--max-queue-delay", "0us"],
    }
    for name, settings in sides.items():
        print(f"  {name}: serve {' '.join(settings)}")
    log = os.path.join(out, "servers.log")
    held = {name: [] for name in sides}  # per round: the highest rate within the objective
    quarters = {}  # (round, rate, side) -> [(low, high, p99 ms)]
    seed = 1
    for r in range(rounds):
        climbing = {name: True for name in sides}
        top = {name: 0.0 for name in sides}
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for f in ladder():
            rate = round(best * f, 1)
            for name in order:
                if not climbing[name]:
                    continue
                proc, url = serve(tp, sides[name], log)
                try:
                    s = load(tp, url, rate, seed)
                finally:
                    stop(proc)
                valid = s["objective"]["valid"]
                quarters[(r, rate, name)] = [(q["lengths"][0], q["lengths"][1], 1e3 * q["p99"])
                                             for q in s.get("latency_by_length_s", [])]
                print(f"  round {r + 1}, {rate:7.1f}/s, {name:24s} p99 "
                      f"{1e3 * s['latency_s']['p99']['value']:8.1f} ms, "
                      f"{'VALID' if valid else 'INVALID'} ({s['objective']['reason']})")
                if valid:
                    top[name] = rate
                else:
                    climbing[name] = False
            seed += 1
            if not any(climbing.values()):
                break
        for name in sides:
            held[name].append(top[name])

    print(f"== 26. highest rate within {SLO} (the longest length quarter too), per round:")
    for name, rates in held.items():
        print(f"  {name:24s} " + ", ".join(f"{x:.0f}/s" for x in rates))
    mine = held["serve-tune's queue"]
    for name in ("per-length calls", "TEI-style token budget"):
        ratios = [a / b for a, b in zip(mine, held[name]) if b > 0]
        if ratios:
            print(f"  serve-tune's queue / {name}: {statistics.median(ratios):.3f} "
                  f"({min(ratios):.3f}-{max(ratios):.3f})")
        else:
            print(f"  serve-tune's queue / {name}: {name} held no rate of the ladder")
    for r in range(rounds):
        common_rate = min(held[name][r] for name in sides)
        if common_rate <= 0:
            continue
        print(f"  p99 by length quarter at {common_rate:.0f}/s, round {r + 1} (ms):")
        for name in sides:
            q = quarters.get((r, common_rate, name), [])
            print(f"    {name:24s} " + "  ".join(f"{lo}-{hi}: {p:.1f}" for lo, hi, p in q))


if __name__ == "__main__":
    main()

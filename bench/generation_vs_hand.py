"""Section 28: text generation. For each decoder (bench/generation_models.py) and batch (1, 8):
`torchperf tune hf:FOLDER` within its budget, then its winner against a careful person's hand set
(HF generate eager fp32, eager bf16, static cache + torch.compile as transformers documents it,
OpenVINO through optimum-intel), each side in a process of its own (bench/generation_side.py),
alternated round by round. Prints each side's decode tokens/s and time to first token, and the
winner over the best hand side per round (geometric mean with a 95% t interval).

    python bench/generation_vs_hand.py TORCHPERF MODELS_DIR OUT_DIR BUDGET ROUNDS CALLS THREADS
"""

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT, NEW = 128, 64
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447}


def side(folder, name, batch, calls, threads, settings=None):
    args = [sys.executable, os.path.join(HERE, "generation_side.py"), folder, name, str(batch),
            str(PROMPT), str(NEW), str(calls), str(threads)]
    if settings:
        args.append(json.dumps(settings))
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        return {"failed": (done.stderr.strip().splitlines() or ["?"])[-1][:160]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def tune(tp, folder, out, batch, budget, threads):
    shutil.rmtree(out, ignore_errors=True)  # each run's tune from nothing: its exports paid in it
    started = time.time()
    done = subprocess.run([tp, "tune", "hf:" + folder, "--batch", str(batch), "--prompt", str(PROMPT),
                           "--new-tokens", str(NEW), "--budget", budget, "--threads", str(threads),
                           "--out", out, "--json", "--quiet"], capture_output=True, text=True)
    wall = time.time() - started
    if done.returncode not in (0, 3):
        print(f"  tune failed ({done.returncode}): {done.stderr.strip()[-300:]}")
        return None, wall
    return json.loads(done.stdout), wall


def summary(result, wall):
    points = result["points"]
    measured = sum(p["measured"] for p in points)
    print(f"  tune: {wall:.0f} s, {measured} points measured of {len(points)} run, "
          f"{sum('not measured' in n for n in result['notes'])} left for the budget")
    for p in sorted((p for p in points if p["measured"]),
                    key=lambda p: -p["decode_tokens_per_s"]["median"])[:6]:
        print(f"    {p['label'][8:]:110.110} {p['decode_tokens_per_s']['median']:8.1f} tok/s "
              f"TTFT {p['ttft_s']['median'] * 1e3:6.1f} ms{'' if p['valid'] else ' (guard: refused)'}")


def openvino_default_precision():
    """OpenVINO's own inference precision on this CPU (bf16 where the CPU has it)."""
    import openvino

    hint = str(openvino.Core().get_property("CPU", "INFERENCE_PRECISION_HINT"))
    return "bf16" if "bf16" in hint or "bfloat16" in hint else "fp32"


def hand_side_of(winner):
    """The hand side whose own lines run the winner's configuration, or None: the ratio is then a
    tie by construction, its distance from 1 the rounds' noise."""
    plain = {"weights": "none", "cache": "dynamic", "compile": "off", "attention": "sdpa"}
    if winner.get("engine") == "openvino":
        same = winner.get("weights") == "none" and \
            winner.get("precision") == openvino_default_precision()
        return "openvino" if same else None
    if any(winner.get(k) != v for k, v in plain.items()):
        return None
    return {"fp32": "hf-eager-fp32", "bf16": "eager-bf16"}.get(winner.get("precision"))


def compare(tp, folder, out, batch, budget, rounds, calls, threads):
    result, wall = tune(tp, folder, out, batch, budget, threads)
    if not result or "winner" not in result:
        print("  tune named no winner")
        return
    summary(result, wall)
    winner = result["points"][result["winner"]]["settings"]
    names = ["hf-eager-fp32", "eager-bf16", "static-compile", "openvino", "winner"]
    runs = {n: [] for n in names}
    for r in range(rounds):
        for n in (names if r % 2 == 0 else list(reversed(names))):
            runs[n].append(side(folder, n, batch, calls, threads, winner if n == "winner" else None))
    for n in names:
        ok = [x for x in runs[n] if "failed" not in x]
        if not ok:
            print(f"  {n:15} failed: {runs[n][0]['failed']}")
            continue
        print(f"  {n:15} decode {statistics.median(x['decode_tokens_per_s'] for x in ok):8.1f} tok/s   "
              f"TTFT {statistics.median(x['ttft_s'] for x in ok) * 1e3:7.1f} ms   first call "
              f"{statistics.median(x['first_call_s'] for x in ok):5.1f} s   rounds "
              + " ".join(f"{x['decode_tokens_per_s']:.1f}" for x in ok))
    hands = [n for n in names[:-1] if all("failed" not in x for x in runs[n])]
    best = max(hands, key=lambda n: statistics.median(x["decode_tokens_per_s"] for x in runs[n]))
    logs = [math.log(w["decode_tokens_per_s"] / h["decode_tokens_per_s"])
            for w, h in zip(runs["winner"], runs[best]) if "failed" not in w]
    if not logs:
        print("  the winner's side failed")
        return
    mean = statistics.mean(logs)
    half = T95.get(len(logs) - 1, 2.0) * statistics.stdev(logs) / math.sqrt(len(logs)) \
        if len(logs) > 1 else float("nan")
    print(f"  winner ({' '.join(f'{k}={v}' for k, v in winner.items())}) / best by hand ({best}) = "
          f"{math.exp(mean):.3f} (95% CI {math.exp(mean - half):.3f}-{math.exp(mean + half):.3f}, "
          f"{len(logs)} rounds)")
    if hand_side_of(winner) == best:
        print(f"  a tie by construction: the winner is {best}'s own configuration, found by the tune")


def main():
    tp, models, out, budget, rounds, calls, threads = sys.argv[1:8]
    folders = subprocess.run([sys.executable, os.path.join(HERE, "generation_models.py"), models],
                             capture_output=True, text=True, check=True).stdout.split()
    only = os.environ.get("BENCH_GENERATION_MODELS", "")
    for folder in folders:
        name = os.path.basename(folder)
        if only and name not in only.split():
            continue
        for batch in [int(b) for b in os.environ.get("BENCH_GENERATION_BATCHES", "1 8").split()]:
            print(f"== 28. {name}, prompt {PROMPT}, {NEW} new tokens, batch {batch}, {threads} threads: "
                  f"tune --budget {budget} vs by hand")
            compare(tp, folder, os.path.join(out, f"{name}-b{batch}"), batch, budget, int(rounds),
                    int(calls), threads)


if __name__ == "__main__":
    main()

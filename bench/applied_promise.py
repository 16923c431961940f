"""make bench, section 20: the promise kept in the caller's process (issue 51). The README's MLP
and a small transformer encoder of our own are tuned with torchperf.tune at the batch the caller
passes, applied with result.apply, and the returned callable is then timed here, in alternated
rounds, against what a careful person writes: the module in eval() under one
torch.inference_mode() around the loop, at the winner's thread count (set once, before any
timing, so that nothing changes process state between timed blocks).

    python bench/applied_promise.py readme-mlp|encoder BUDGET ROUNDS SECONDS OUT

Prints applied / tune's stated figure (target >= 0.95) and applied / careful (target >= 1.0),
each as the median of per-round ratios with their range; OUT/promise.json has every round.
"""

import json
import os
import statistics
import sys
import time

import torch

# The encoder lives in a module of its own, as docs/python-api.md asks of a model whose python
# runtime points should time the module itself (a class in __main__ cannot reach a worker).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from promise_models import Encoder  # noqa: E402


def model_and_inputs(name):
    torch.manual_seed(0)
    if name == "readme-mlp":  # the README's five lines
        model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                    torch.nn.Linear(256, 10))
        return model, torch.randn(8, 64)
    return Encoder(), torch.randint(0, 1000, (8, 32))


def timed(call, calls):
    start = time.perf_counter()
    call(calls)
    return time.perf_counter() - start


def main():
    name, budget, rounds, seconds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        float(sys.argv[4]), sys.argv[5]
    import torchperf

    model, x = model_and_inputs(name)
    result = torchperf.tune(model, x, budget=budget, out=out, progress=False)
    print(result, file=sys.stderr)
    threads = result.winner["configuration"].get("threads", "n/a")
    if threads not in ("n/a", None):
        torch.set_num_threads(int(threads))  # once, before anything is timed
    fast = result.apply(model)
    careful = model.eval()

    def applied_loop(n):
        for _ in range(n):
            fast(x)

    def careful_loop(n):
        with torch.inference_mode():
            for _ in range(n):
                careful(x)

    sides = {"applied": applied_loop, "careful": careful_loop}
    calls = {}
    for side, loop in sides.items():
        loop(20)
        per_call = timed(loop, 20) / 20
        calls[side] = max(1, int(seconds / max(per_call, 1e-9)))
    figures = {side: [] for side in sides}
    batch = x.shape[0]
    for r in range(rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(list(sides)))
        for side in order:
            figures[side].append(batch * calls[side] / timed(sides[side], calls[side]))
    stated = result.winner["throughput"]
    vs_careful = [a / c for a, c in zip(figures["applied"], figures["careful"])]
    vs_stated = [a / stated for a in figures["applied"]]
    check = getattr(fast, "check", None)
    applied_what = (fast.configuration if hasattr(fast, "configuration") else "the model as given")
    with open(os.path.join(out, "promise.json"), "w") as f:
        json.dump({"model": name, "winner": result.winner["key"], "applied": str(applied_what),
                   "stated_samples_per_s": stated, "threads": threads, "figures": figures,
                   "applied_over_stated": vs_stated, "applied_over_careful": vs_careful,
                   "apply_check": check.text() if check else None}, f, indent=1)

    def line(values):
        return (f"median {statistics.median(values):.3f} (range {min(values):.3f}-"
                f"{max(values):.3f})")

    print(f"   winner {result.winner['key']}; apply returned {applied_what}")
    print(f"   tune stated {stated:,.0f} samples/s at batch {result.winner['batch']}; applied here "
          f"{statistics.median(figures['applied']):,.0f}, careful eval()+inference_mode "
          f"{statistics.median(figures['careful']):,.0f} (threads {threads}, {rounds} rounds)")
    ok_stated = statistics.median(vs_stated) >= 0.95
    ok_careful = statistics.median(vs_careful) >= 1.0
    print(f"   applied / stated:  {line(vs_stated)}, target >= 0.95: {'met' if ok_stated else 'NOT met'}")
    print(f"   applied / careful: {line(vs_careful)}, target >= 1.0: {'met' if ok_careful else 'NOT met'}")


if __name__ == "__main__":
    main()

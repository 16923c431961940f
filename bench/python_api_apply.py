"""make bench, section 16: the Python API's promise, measured. Tunes a module with torchperf.tune
(the five lines a user writes), applies the winner with result.apply, and times the returned
callable with torch.utils.benchmark in this same run, at the winner's batch: its throughput
against the figure tune reported for that winner (target: within 7%).

    python bench/python_api_apply.py mlp|resnet18 BUDGET ROUNDS SECONDS OUT

Prints the winner, tune's figure with its interval, the speedup over the model as given, and
each round's torch.utils.benchmark throughput and ratio; OUT/apply-bench.json has them as JSON.
"""

import json
import os
import statistics
import sys

import torch
import torch.utils.benchmark as benchmark

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts", "fixture_models"))


def model_and_inputs(name):
    torch.manual_seed(0)
    if name == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
                                    torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                    torch.nn.Linear(1024, 10))
        return model, torch.randn(8, 256)
    from resnet import resnet18  # torchvision's ResNet-18, defined in torch.nn

    return resnet18().eval(), torch.randn(8, 3, 224, 224)


def main():
    name, budget, rounds, seconds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        float(sys.argv[4]), sys.argv[5]
    import torchperf

    model, example = model_and_inputs(name)
    # The five lines.
    result = torchperf.tune(model, example, budget=budget, out=out, progress=False)
    print(result, file=sys.stderr)
    fast = result.apply(model)

    winner = result.winner
    batch = int(winner["batch"])
    x = torch.randn(batch, *example.shape[1:])
    for _ in range(5):  # warm-up: a torch.compile winner compiles again for a new batch
        fast(x)
    timer = benchmark.Timer(stmt="fast(x)", globals={"fast": fast, "x": x},
                            num_threads=torch.get_num_threads())
    measured = []
    for _ in range(rounds):
        m = timer.blocked_autorange(min_run_time=seconds)
        measured.append(batch / m.median)
    # What apply returned is the winner, or the model as given when nothing beat it: compare with
    # tune's figure for that (the as-given figure is the winner's divided by their head-to-head
    # ratio, both at the winner's batch).
    reference = winner["throughput"] if result.beats_as_given else \
        winner["throughput"] / result.speedup
    ratios = [m / reference for m in measured]
    median = statistics.median(ratios)
    with open(os.path.join(out, "apply-bench.json"), "w") as f:
        json.dump({"model": name, "winner": winner["key"], "applied": type(fast).__name__,
                   "tune_samples_per_s": winner["throughput"], "compared_with": reference,
                   "tune_ci": list(winner["throughput_ci"]), "speedup_over_as_given": result.speedup,
                   "speedup_ci": list(result.speedup_ci), "verdict": result.verdict,
                   "benchmark_samples_per_s": measured, "ratios": ratios, "median_ratio": median},
                  f, indent=1)
    low, high = winner["throughput_ci"]
    interval = f"({low:.1f}-{high:.1f})" if low is not None else "(measured briefly: no interval)"
    s_low, s_high = result.speedup_ci
    print(f"   winner {winner['key']} (apply returned {type(fast).__name__}), {result.speedup:.3f}x "
          f"({s_low:.3f}-{s_high:.3f}) the model as given: {result.verdict}")
    print(f"   tune reported {winner['throughput']:.1f} samples/s {interval} for the winner"
          + ("" if result.beats_as_given else f", so {reference:.1f} for the model as given")
          + "; torch.utils.benchmark of apply's callable: " + " ".join(f"{v:.1f}" for v in measured))
    verdict = "met" if 0.93 <= median <= 1.07 else "NOT met"
    print(f"   apply / tune: median {median:.3f} (rounds " + " ".join(f"{r:.3f}" for r in ratios)
          + f"), target 0.93-1.07: {verdict}")


if __name__ == "__main__":
    main()

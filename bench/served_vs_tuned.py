"""make bench, section 27: what is served is what was measured (issue 84). One configuration of
each kind of runtime (C++ AOTInductor, Python eager, OpenVINO in a Python worker) of a CNN
(the MobileNetV2 fixture, batch 8, one intra-op thread), measured by `torchperf bench` and then
served by `torchperf serve` under a closed loop of 16 clients of one sample each (a call takes 8,
--max-queue-delay 50ms), each in its own process, alternated round by round. One intra-op thread
leaves the other core to the HTTP threads and the load generator, which a separate client
machine would run.

    python bench/served_vs_tuned.py TORCHPERF FIXTURES ROUNDS SECONDS OUT

Prints each round's samples/s of both sides and the served over the measured figure (geometric
mean and 95% interval over the rounds; target within 10%).
"""

import json
import math
import os
import re
import statistics
import subprocess
import sys

from serving_lengths import stop

CONFIGURATIONS = ("runtime=cpp,graph=aoti", "runtime=python,graph=eager,grad=inference",
                  "runtime=openvino,graph=openvino")
SETTINGS = "threads=1,batch=8"
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447}


def bench(tp, model, configuration, seconds, log):
    run = subprocess.run([tp, "bench", model, "--config", f"{configuration},{SETTINGS}",
                          "--time", str(seconds), "--json"], capture_output=True, text=True)
    open(log, "a").write(run.stderr)
    if run.returncode not in (0, 3):
        raise SystemExit(f"bench {configuration} failed ({run.returncode}): "
                         f"{run.stderr.strip().splitlines()[-1:]}")
    return json.loads(run.stdout)["measurement"]["throughput_samples_per_s"]


def served(tp, model, configuration, seconds, log):
    proc = subprocess.Popen([tp, "serve", model, "--config", f"{configuration},{SETTINGS}",
                             "--port", "0", "--name", "m", "--max-batch", "8",
                             "--max-queue-delay", "50ms", "--max-call-memory", "off"],
                            stdout=subprocess.PIPE, stderr=open(log, "a"), text=True)
    try:
        first = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)", first)
        if not found:
            raise SystemExit(f"serve {configuration} did not start: {first.strip()} ({log})")
        url = f"http://127.0.0.1:{found.group(1)}"
        run = subprocess.run([tp, "load", url, "--model", "m", "--concurrency", "16",
                              "--duration", f"{seconds}s", "--json", "--quiet"],
                             capture_output=True, text=True)
        if run.returncode != 0:
            raise SystemExit(f"load of {configuration} failed ({run.returncode}): {run.stderr}")
        return json.loads(run.stdout)["throughput_per_s"]
    finally:
        stop(proc)


def main():
    tp, fixtures, rounds, seconds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        float(sys.argv[4]), sys.argv[5]
    os.makedirs(out, exist_ok=True)
    model = os.path.join(fixtures, "mobilenet_v2_dynamic.pt2")
    log = os.path.join(out, "served_vs_tuned.log")
    for configuration in CONFIGURATIONS:
        print(f"  {configuration},{SETTINGS}")
        logs = []
        for r in range(1, rounds + 1):
            # Alternated: which side runs first moves each round.
            order = ("bench", "serve") if r % 2 else ("serve", "bench")
            figures = {}
            for side in order:
                figures[side] = (bench if side == "bench" else served)(tp, model, configuration,
                                                                       seconds, log)
            ratio = figures["serve"] / figures["bench"]
            logs.append(math.log(ratio))
            print(f"    round {r}: bench {figures['bench']:8.1f} samples/s   served "
                  f"{figures['serve']:8.1f} samples/s   ratio {ratio:.3f}")
        mean = statistics.mean(logs)
        half = (T95.get(len(logs) - 1, 2.0) * statistics.stdev(logs) / math.sqrt(len(logs))
                if len(logs) > 1 else float("nan"))
        ratio = math.exp(mean)
        verdict = "within" if abs(ratio - 1) <= 0.10 else "OUTSIDE"
        print(f"    served / measured = {ratio:.3f} (95% CI {math.exp(mean - half):.3f}-"
              f"{math.exp(mean + half):.3f}, geometric mean of {len(logs)} rounds) ({verdict} 10%)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Evidence table: a model's baseline against every single-knob change, each measured interleaved
with `torchperf bench --vs baseline`, printed as Markdown. Knobs and values come from
`torchperf knobs --json`; what applies comes from the model's own resolved baseline.

usage: scripts/knob_table.py TORCHPERF MODEL [bench args…]   e.g.
       scripts/knob_table.py build/torchperf builtin:resnet18 --batch 8 --time 5"""
import json
import os
import subprocess
import sys


def interval(ci, decimals):
    """An interval, or why there is none (fewer than 6 samples)."""
    if ci[0] is None:
        return "(no CI: < 6 samples)"
    return f"({ci[0]:.{decimals}f}–{ci[1]:.{decimals}f})"


def bench(tp, model, args):
    run = subprocess.run([tp, "bench", model, *args, "--json", "--quiet"], capture_output=True, text=True)
    if run.returncode not in (0, 3):
        return None, run.stderr.strip()
    return json.loads(run.stdout), None


def main():
    tp, model, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    knobs = json.loads(subprocess.run([tp, "knobs", "--json"], capture_output=True, text=True, check=True).stdout)
    # A short run only to learn the resolved baseline: which knobs apply, at which values.
    quick = [a for i, a in enumerate(extra) if a != "--time" and (i == 0 or extra[i - 1] != "--time")]
    base, err = bench(tp, model, quick + ["--time", "0.2"])
    if base is None:
        sys.exit(err)
    resolved = base["measurement"]["configuration"]["knobs"]
    changes = []
    for knob in knobs["knobs"]:
        name = knob["name"]
        if not resolved[name]["applicable"] or name == "batch":
            continue
        values = knob["values"] or [str(n) for n in range(1, os.cpu_count() + 1)]
        changes += [(name, v) for v in values if v != resolved[name]["value"]]
    print(f"`{model}` {' '.join(extra)} — baseline: `{base['measurement']['configuration']['string']}`\n")
    print("| change | samples/s (95% CI) | baseline samples/s | ratio (95% CI) | verdict | cosine vs fp32 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, value in changes:
        result, err = bench(tp, model, extra + [f"--{name.replace('_', '-')}", value, "--vs", "baseline"])
        if result is None and "does not apply" in err:
            print(f"| {name}={value} | not applicable: {err.split('does not apply to this workload: ')[-1]} | | | | |")
            continue
        if result is None:
            print(f"| {name}={value} | failed: {err} | | | | |")
            continue
        c = result["comparison"]
        a, b, s = c["a"], c["b"], c["speedup"]
        cos = a["quality"]["cosine"]
        print(f"| {name}={value} | {a['throughput_samples_per_s']:.2f} {interval(a['throughput_ci'], 2)}"
              f" | {b['throughput_samples_per_s']:.2f} | {s['ratio']:.3f} {interval(s['ci'], 3)}"
              f" | {c['verdict']} ({s['rounds']} rounds) | {'n/a' if cos is None else f'{cos:.5f}'} |",
              flush=True)


if __name__ == "__main__":
    main()

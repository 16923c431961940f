#!/usr/bin/env python3
"""What a careful person tries by hand, in Python, for a model they have as a torch.export program
and as TorchScript: TorchScript frozen and optimised for inference (with and without
channels_last), and torch.compile (the CPU guide's setting: Inductor's freezing) with and without
channels_last. Every setting runs under inference_mode at every usable core, in its own process,
timed by torch.utils.benchmark after its first call (the compile) and a warm-up; `make bench`
compares tune's winner with the best of them.

  hand_tuned_program.py PROGRAM.pt2 TORCHSCRIPT.pt SPEC BATCH SECONDS        -> JSON: every setting, best
  hand_tuned_program.py PROGRAM.pt2 TORCHSCRIPT.pt SPEC BATCH SECONDS NAME   -> JSON: one setting

SPEC is torchperf's input spec without the batch: "3x224x224", or "int64:32@0..1000;int64:32@1..2",
read by the core (TORCHPERF_CLI names the torchperf binary).
channels_last settings apply only where an input is a 4-D float tensor."""
import json
import os
import subprocess
import sys
import time

SETTINGS = ("torchscript-frozen-opt", "torchscript-frozen-opt-channels-last", "compile",
            "compile-channels-last")


sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))


def four_d(spec):
    """Whether an input is a 4-D float tensor, as the core reads the spec (TORCHPERF_CLI)."""
    from torchperf import feed

    return any(len(entry["shape"]) == 3 and "float" in entry["dtype"]
               for entry in feed.resolve(spec)["inputs"])


def measure(program, script, spec, batch, seconds, name):
    import torch
    import torch.utils.benchmark as benchmark
    from torchperf import feed

    threads = len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    inputs = feed.example_inputs(feed.resolve(spec), batch)
    channels_last = name.endswith("channels-last")
    if channels_last:
        inputs = tuple(x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x
                       for x in inputs)
    with torch.inference_mode():
        if name.startswith("torchscript"):
            model = torch.jit.load(script).eval()
            if channels_last:
                model = model.to(memory_format=torch.channels_last)
            model = torch.jit.optimize_for_inference(torch.jit.freeze(model))
        else:
            import torch._inductor.config
            torch._inductor.config.freezing = True
            model = torch.export.load(program).module()
            if channels_last:
                model = model.to(memory_format=torch.channels_last)
            model = torch.compile(model)
        started = time.perf_counter()
        model(*inputs)
        first_call_s = time.perf_counter() - started
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            model(*inputs)
        timer = benchmark.Timer(stmt="model(*inputs)", globals={"model": model, "inputs": inputs},
                                num_threads=threads)
        m = timer.blocked_autorange(min_run_time=seconds)
    return {"setting": name, "samples_per_s": batch / m.median, "median_s": m.median,
            "iqr_s": m.iqr, "blocks": len(m.times), "first_call_s": first_call_s,
            "threads": threads}


def main(argv):
    program, script, spec, batch, seconds = argv[:5]
    batch, seconds = int(batch), float(seconds)
    if len(argv) > 5:
        print(json.dumps(measure(program, script, spec, batch, seconds, argv[5])))
        return
    results = []
    for name in SETTINGS:
        if "channels-last" in name and not four_d(spec):
            continue
        run = subprocess.run([sys.executable, __file__, program, script, spec, str(batch),
                              str(seconds), name], capture_output=True, text=True)
        if run.returncode != 0:
            results.append({"setting": name, "failed": run.stderr.strip().splitlines()[-1:]})
            continue
        results.append(json.loads(run.stdout.strip().splitlines()[-1]))
    ok = [r for r in results if "samples_per_s" in r]
    print(json.dumps({"settings": results,
                      "best": max(ok, key=lambda r: r["samples_per_s"]) if ok else None}))


if __name__ == "__main__":
    main(sys.argv[1:])

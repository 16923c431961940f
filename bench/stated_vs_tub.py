"""make bench, section 24: the figure tune states is the true one (issue 60).

A CNN that is not a built-in (the MobileNetV2 fixture, defined with torch.nn alone), batch 16, every
usable core: one exhaustive tune per model form measures each runtime and format in full — C++
TorchScript (frozen-opt) on its scripted file; C++ AOTInductor, Python eager and Python
torch.compile (contiguous and channels_last) on its torch.export program. Then, for each
configuration, ROUNDS rounds alternate its sides, each in a fresh process: a tune of that one
configuration (`--space` pinned to it: what tune states for it), `torchperf bench` of it (only
with BENCH_STATED_WITH_BENCH=1: a diagnosis, not the target), the worker's own Side of it in a
plain process timed by torch.utils.benchmark (only with BENCH_STATED_WITH_WORKER=1: the point's
preparation apart from the process that runs it), and torch.utils.benchmark of it
as a user runs it in five lines (the same threads, format and allocator environment). Side by side in one round, because this machine's pace drifts 20-30% over
minutes: a figure stated minutes before its check would measure the drift. A second TUB process
each round is the control: TUB / TUB is how far two fresh processes of the same five lines
differ here. Prints the medians and stated / TUB per configuration (target within 5%), with the
per-round ratios' spread, bench / TUB and TUB / TUB, and the host's steal share while each side
ran (/proc/stat): the ratio over the quiet rounds alone, where the host took under 2% from both.

    python bench/stated_vs_tub.py TORCHPERF FIXTURES ROUNDS SECONDS OUT
    python bench/stated_vs_tub.py --tub KIND PATH FORMAT THREADS SECONDS   (one side: JSON)
    python bench/stated_vs_tub.py --worker-side PROGRAM GRAPH FORMAT THREADS SECONDS
"""

import json
import os
import statistics
import subprocess
import sys

BATCH = 16
QUIET_STEAL = 0.02  # a round is quiet when the host stole under 2% of the CPUs from both sides
INPUT = ["--input", "3x224x224"]


def tub(kind, path, memory_format, threads, seconds):
    """KIND: torchscript (frozen-opt), aoti (a package), eager or compile (a program), ort or
    openvino (the program converted, as a user starts the engine by hand)."""
    import torch
    import torch.utils.benchmark as benchmark

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x = torch.randn(BATCH, 3, 224, 224)
    channels_last = memory_format == "channels_last"
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    if kind == "torchscript":
        model = torch.jit.load(path).eval()
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
        model = torch.jit.optimize_for_inference(torch.jit.freeze(model))
    elif kind == "aoti":
        model = torch._inductor.aoti_load_package(path)
    elif kind in ("ort", "openvino"):  # issue 61: the engines, as engines_vs_hand.py starts them
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from engines_vs_hand import engine_by_hand

        model = engine_by_hand(kind, path, torch.export.load(path), (x,), threads)
    else:
        model = torch.export.load(path).module()
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
        if kind == "compile":
            import torch._inductor.config
            torch._inductor.config.freezing = True
            model = torch.compile(model)
    import resource

    with torch.inference_mode():
        for _ in range(3):
            model(x)  # the compile, the profiling executor's runs
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        m = benchmark.Timer(stmt="model(x)", globals={"model": model, "x": x},
                            num_threads=threads).blocked_autorange(min_run_time=seconds)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    # Minor page faults per call, as torchperf reports them: a heap that returns freed
    # activations to the kernel and faults them in again each call runs slower.
    calls = m.number_per_run * len(m.times)
    print(json.dumps({"samples_per_s": BATCH / m.median, "runs": len(m.times),
                      "faults_per_call": faults / max(1, calls)}))


def worker_side(model, graph, memory_format, threads, seconds):
    """The Python worker's own Side (worker.py: the model loaded, copied, placed, compiled and
    wrapped as a point's is) in a plain process, timed by torch.utils.benchmark: what the point's
    preparation gives outside the tune's process. For eager, compile and the engines' programs."""
    import resource
    import tempfile

    import torch
    import torch.utils.benchmark as benchmark

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    from torchperf import worker

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "inputs.pt")
        torch.save((torch.randn(BATCH, 3, 224, 224),), path)
        side = worker.Side({"protocol": 1, "job": "python-side", "slot": 0, "model_kind": "program",
                            "model": model, "inputs": path, "stream": "", "graph": graph,
                            "precision": "fp32", "format": memory_format, "grad": "inference",
                            "threads": threads, "interop_threads": 0, "device": "cpu",
                            "cudnn_benchmark": "n/a", "tf32": "n/a", "compile_artifacts": ""})
    for _ in range(3):
        side.block(1)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    m = benchmark.Timer(stmt="fn(*x)", globals={"fn": side.fn, "x": side.inputs},
                        num_threads=threads).blocked_autorange(min_run_time=seconds)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    calls = m.number_per_run * len(m.times)
    print(json.dumps({"samples_per_s": BATCH / m.median, "runs": len(m.times),
                      "faults_per_call": faults / max(1, calls)}))


def engine_installed(name):
    import importlib.util

    return importlib.util.find_spec(name) is not None


def host_ticks():
    """The machine's steal and total CPU ticks (/proc/stat): on a virtual machine the host takes
    the vCPUs for its other guests, and a timing taken then measures the host, not the side."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    return fields[7], sum(fields)


STOLEN = []  # the steal share of each side's run, in call order


def run_json(command):
    steal0, total0 = host_ticks()
    run = subprocess.run(command, capture_output=True, text=True)
    steal1, total1 = host_ticks()
    STOLEN.append((steal1 - steal0) / max(1, total1 - total0))
    if not run.stdout.strip():
        raise SystemExit(f"{command[:3]} failed ({run.returncode}): {run.stderr.strip()[-600:]}")
    try:
        return json.loads(run.stdout)
    except json.JSONDecodeError:  # a side's one line after whatever it printed before
        return json.loads(run.stdout.strip().splitlines()[-1])


def tune(tp, model, space, seconds, out, leaders=3):
    subprocess.run(["rm", "-rf", out], check=True)
    result = run_json([tp, "tune", model, *INPUT, "--space", space, "--search", "exhaustive",
                       "--leaders", str(leaders), "--time", str(seconds), "--out", out, "--json",
                       "--quiet"])
    stated = {}
    for line in open(os.path.join(out, "results.jsonl")):
        record = json.loads(line)
        if record.get("record") == "point" and record.get("status") == "ok":
            stated[record["key"]] = record
    return result, stated


def main():
    if sys.argv[1] == "--tub":
        tub(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]))
        return
    if sys.argv[1] == "--worker-side":
        worker_side(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]))
        return
    tp, fixtures, rounds, seconds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        float(sys.argv[4]), sys.argv[5]
    threads = os.cpu_count()
    # torchperf bench beside them is a diagnosis (is it the tune or the harness?), not the target:
    # BENCH_STATED_WITH_BENCH=1 adds it, at a quarter more time.
    with_bench = os.environ.get("BENCH_STATED_WITH_BENCH", "0") == "1"
    # BENCH_STATED_WITH_WORKER=1: the worker's own Side in a plain process, timed by TUB (a
    # diagnosis: is a difference in the point's preparation or in the process that runs it?).
    with_worker = os.environ.get("BENCH_STATED_WITH_WORKER", "0") == "1"
    program = os.path.join(fixtures, "mobilenet_v2_dynamic.pt2")
    scripted = os.path.join(fixtures, "mobilenet_v2_scripted.pt")
    pinned = f"threads={threads};batch={BATCH};precision=fp32;allocator=glibc"
    forms = [(scripted, f"runtime=cpp;graph=frozen-opt;mode=eval;grad=inference;{pinned}"),
             (program, f"runtime=cpp,python;graph=aoti,eager,compile;grad=inference;"
                       f"format=contiguous,channels_last;{pinned}")]
    # The engines the .venv has (issue 61): their guides' start, each a configuration of its own.
    engines = [e for e in ("onnxruntime", "openvino") if engine_installed(e)]
    if engines:
        forms.append((program, f"runtime={','.join(engines)};graph=ort,openvino;{pinned}"))
    # BENCH_STATED_CASES=compile:contiguous,aoti:contiguous: only these (KIND:FORMAT) configurations,
    # and only the forms' tunes that hold one (a diagnosis of one configuration in less time).
    only = [c for c in os.environ.get("BENCH_STATED_CASES", "").split(",") if c]
    if only:
        forms = [f for f in forms if f[0] == program or any(c.startswith("torchscript:") for c in only)]
    cases = []
    for i, (model, space) in enumerate(forms):
        _, stated = tune(tp, model, space, seconds, os.path.join(out, f"tune-{i}"))
        for key, record in stated.items():
            m = record["measurement"]
            knobs = m["configuration"]["knobs"]
            graph = knobs["graph"]["value"]
            fmt = knobs["format"]["value"] if knobs["format"]["applicable"] else "contiguous"
            fmt = "contiguous" if graph in ("ort", "openvino") else fmt
            kind = {"frozen-opt": "torchscript", "aoti": "aoti"}.get(graph, graph)
            path = (m.get("compile") or {}).get("package") if kind == "aoti" else model
            if not only or f"{kind}:{fmt}" in only:
                cases.append({"key": key, "model": model, "kind": kind, "path": path, "format": fmt})
    print(f"   {len(cases)} configurations, batch {BATCH}, {threads} thread(s), {rounds} rounds "
          f"alternated, {seconds:g} s each")
    for n, case in enumerate(cases):
        runs = {"tune": [], "tub": [], "tub-again": []}
        if with_bench:
            runs["bench"] = []
        if with_worker and case["kind"] in ("eager", "compile", "ort", "openvino"):
            runs["worker-side"] = []
        faults = {side: [] for side in runs}  # minor page faults per call, each run
        stolen = {side: [] for side in runs}  # the host's steal share while the side ran
        order = [side for side in ["tune", "tub", "bench", "worker-side", "tub-again"] if side in runs]
        orders = [order, order[::-1]]
        for r in range(rounds):
            for side in orders[r % 2]:
                if side.startswith("tub") or side == "worker-side":  # a plain process, TUB-timed
                    what = (["--tub", case["kind"], case["path"]] if side.startswith("tub") else
                            ["--worker-side", case["model"], case["kind"]])
                    got = run_json([sys.executable, os.path.abspath(__file__), *what,
                                    case["format"], str(threads), str(seconds)])
                    runs[side].append(got["samples_per_s"])
                    faults[side].append(got["faults_per_call"])
                    stolen[side].append(STOLEN[-1])
                elif side == "bench":
                    m = run_json([tp, "bench", case["model"], *INPUT, "--config", case["key"],
                                  "--time", str(seconds), "--json", "--quiet"])["measurement"]
                    runs[side].append(m["throughput_samples_per_s"])
                    faults[side].append(m["memory"]["minor_page_faults_per_iteration"])
                    stolen[side].append(STOLEN[-1])
                else:  # a tune of this one configuration: the figure it states for it
                    _, one = tune(tp, case["model"], case["key"].replace(",", ";"), seconds,
                                  os.path.join(out, f"one-{n}"), leaders=1)
                    stolen[side].append(STOLEN[-1])
                    m = one[case["key"]]["measurement"]
                    runs[side].append(one[case["key"]]["metrics"]["throughput_samples_per_s"])
                    faults[side].append(m["memory"]["minor_page_faults_per_iteration"])
        ratios = [a / b for a, b in zip(runs["tune"], runs["tub"])]
        # Rounds in which the host took under 2% of the CPUs from both sides: the ratio of a quiet
        # round measures the harnesses, that of a stolen one the host's other guests.
        quiet = [r for r, a, b in zip(ratios, stolen["tune"], stolen["tub"])
                 if max(a, b) < QUIET_STEAL]
        t = statistics.median(runs["tub"])
        case.update(stated=statistics.median(runs["tune"]),
                    bench=statistics.median(runs["bench"]) if with_bench else None,
                    tub=t, runs=runs, ratio=statistics.median(ratios),
                    bench_ratio=statistics.median(a / b for a, b in zip(runs["bench"], runs["tub"]))
                    if with_bench else None,
                    control=[a / b for a, b in zip(runs["tub-again"], runs["tub"])], faults=faults,
                    stolen=stolen, quiet_ratio=statistics.median(quiet) if quiet else None,
                    quiet_rounds=len(quiet))
        verdict = "within" if abs(case["ratio"] - 1) <= 0.05 else "OUTSIDE"
        bench = (f"bench {case['bench']:7.2f}  " if with_bench else "")
        bench_ratio = (f"bench/TUB {case['bench_ratio']:.3f}  " if with_bench else "")
        print(f"   {case['kind']:12s} {case['format']:14s} tune stated {case['stated']:7.2f}  "
              f"{bench}TUB {t:7.2f} samples/s  stated/TUB {case['ratio']:.3f} "
              f"({min(ratios):.3f}-{max(ratios):.3f}, {verdict} 5%)  {bench_ratio}TUB/TUB "
              f"{min(case['control']):.3f}-{max(case['control']):.3f}")
        # Every side over the TUB process of its round, per round: which harness reads apart.
        print("      each side / TUB per round: " + ", ".join(
            f"{side} {'/'.join(f'{a / b:.3f}' for a, b in zip(v, runs['tub']))}"
            for side, v in runs.items() if side != "tub"))
        print("      minor page faults per call: " + ", ".join(
            f"{side} {'/'.join(f'{x:,.0f}' for x in v)}" for side, v in faults.items()))
        print("      host steal while each side ran: " + ", ".join(
            f"{side} {'/'.join(f'{100 * x:.1f}%' for x in v)}" for side, v in stolen.items()) +
              (f"; stated/TUB over the {len(quiet)} quiet round(s): {case['quiet_ratio']:.3f}"
               if quiet else "; no quiet round"))
    within = sum(abs(c["ratio"] - 1) <= 0.05 for c in cases)
    inside = sum(min(c["control"]) <= c["ratio"] <= max(c["control"]) or abs(c["ratio"] - 1) <= 0.05
                 for c in cases)
    print(f"   stated within 5% of TUB: {within} of {len(cases)}; within 5% or inside the spread "
          f"of TUB / TUB (two fresh processes of the same five lines): {inside} of {len(cases)}")
    judged = [c for c in cases if c["quiet_ratio"] is not None]
    print(f"   over quiet rounds only (host steal < {100 * QUIET_STEAL:g}% on both sides): "
          f"{sum(abs(c['quiet_ratio'] - 1) <= 0.05 for c in judged)} of {len(judged)} within 5% "
          f"({len(cases) - len(judged)} configuration(s) had no quiet round)")
    with open(os.path.join(out, "stated_vs_tub.json"), "w") as f:
        json.dump(cases, f, indent=1)


if __name__ == "__main__":
    main()

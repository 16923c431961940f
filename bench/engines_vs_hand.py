"""make bench, section 25: tune's winner, engines in its space, against the best of what a careful
person tries by hand in five lines, on three models (issue 61).

Models: the ResNet-18 and MobileNetV2 fixtures (torchvision's definitions, scripts/fixture_models),
MobileNetV2 with batch-norm statistics from random images (mobilenet_v2_bn, when
BENCH_ENGINES_MODELS names it: outputs of a trained model's scale, which int8 can represent)
and an encoder of our own (bench/tune_in_budget.py's: 6 layers, d 384, inputs by name, length 128),
each a torch.export program, batch 16. `torchperf tune --budget BUDGET --batch 16` runs first,
alone, conversions inside its budget; then, in alternated rounds, each side in its own process on
every usable core:

  tune            torchperf bench of tune's winner (its own threads)
  compile         torch.compile of the program's module (Inductor's freezing on), inference_mode
  compile-cl      the same in channels_last (the CNNs)
  autotune        torch.compile(mode="max-autotune"), and autotune-cl (BENCH_ENGINES_AUTOTUNE=0
                  leaves both out: their compiles take minutes on 2 cores)
  ort             the program exported by torch.onnx (dynamo), ONNX Runtime with all graph
                  optimisations, intra-op threads = cores
  openvino        openvino.convert_model of the program, the latency hint, fp32, threads = cores

Each hand side is timed by torch.utils.benchmark (blocked_autorange) after warm-up calls.

    python bench/engines_vs_hand.py TORCHPERF FIXTURES BUDGET ROUNDS SECONDS OUT
    python bench/engines_vs_hand.py --side NAME PROGRAM SPEC SECONDS   (one hand side: JSON)

Prints each model's tune (points, engines tried, winner), each side per round, and tune's winner
over the best hand side of each round (target >= 1.0 on each model).
"""

import json
import os
import statistics
import subprocess
import sys
import time

BATCH = 16
HERE = os.path.dirname(os.path.abspath(__file__))


def inputs_of(spec):
    """Batch-16 inputs of an input spec: 3x224x224, or the encoder's ids and mask (length 128)."""
    import torch

    torch.manual_seed(0)
    if spec == "encoder":
        ids = torch.randint(1, 32000, (BATCH, 128))
        return (ids, torch.ones_like(ids))
    return (torch.randn(BATCH, *[int(d) for d in spec.split("x")]),)


def tub_samples_per_s(fn, inputs, seconds):
    import torch
    import torch.utils.benchmark as benchmark

    for _ in range(3):
        fn(*inputs)
    timer = benchmark.Timer(stmt="fn(*inputs)", globals={"fn": fn, "inputs": inputs},
                            num_threads=torch.get_num_threads())
    return BATCH / timer.blocked_autorange(min_run_time=seconds).median


def engine_by_hand(name, program_path, program, inputs, threads):
    """An engine as the guides start it, in five lines: ONNX Runtime with all graph optimisations
    on the program torch.onnx exports (the file kept beside the program), or OpenVINO's latency
    hint in fp32; `threads` intra-op threads either way. A callable of torch tensors."""
    import torch

    if name == "ort":
        import onnxruntime as ort

        path = f"{program_path}.onnx"
        if not os.path.exists(path):
            torch.onnx.export(program, inputs, dynamo=True).save(path)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return lambda *xs: session.run(None, {n: x.numpy() for n, x in zip(names, xs)})
    import openvino as ov

    compiled = ov.Core().compile_model(ov.convert_model(program), "CPU", {
        "PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads,
        "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    return lambda *xs: request.infer([x.numpy() for x in xs], share_inputs=True)


def side(name, program_path, spec, seconds):
    """One hand side, in this process: five lines of what the guides say, timed by TUB."""
    import torch

    cores = len(os.sched_getaffinity(0))
    torch.set_num_threads(cores)
    program = torch.export.load(program_path)
    inputs = inputs_of(spec)
    started = time.perf_counter()
    if name.startswith(("compile", "autotune")):
        import torch._inductor.config as inductor_config

        inductor_config.freezing = True
        model = program.module()
        if name.endswith("-cl"):
            model = model.to(memory_format=torch.channels_last)
            inputs = tuple(t.contiguous(memory_format=torch.channels_last) for t in inputs)
        compiled = torch.compile(model, mode="max-autotune" if name.startswith("autotune") else None)

        def fn(*xs):
            with torch.inference_mode():
                return compiled(*xs)
    elif name in ("ort", "openvino"):
        fn = engine_by_hand(name, program_path, program, inputs, cores)
    else:
        raise SystemExit(f"unknown side {name}")
    fn(*inputs)
    prepare_s = time.perf_counter() - started
    print(json.dumps({"side": name, "samples_per_s": tub_samples_per_s(fn, inputs, seconds),
                      "prepare_s": prepare_s, "threads": cores}))


def hand(name, program, spec, seconds):
    run = subprocess.run([sys.executable, os.path.abspath(__file__), "--side", name, program, spec,
                          str(seconds)], capture_output=True, text=True)
    if run.returncode != 0:
        return None, run.stderr.strip().splitlines()[-1][:200] if run.stderr.strip() else "failed"
    return json.loads(run.stdout.strip().splitlines()[-1])["samples_per_s"], None


def torchperf_bench(tp, program, flags, config, seconds):
    run = subprocess.run([tp, "bench", program, *flags, "--config", config, "--time",
                          str(seconds), "--json", "--quiet"], capture_output=True, text=True)
    if not run.stdout.strip():
        raise SystemExit(f"torchperf bench failed ({run.returncode}): {run.stderr.strip()[-600:]}")
    return json.loads(run.stdout)["measurement"]["throughput_samples_per_s"]


def write_encoder(out):
    import torch

    sys.path.insert(0, HERE)
    from tune_in_budget import encoder

    path = os.path.join(out, "encoder.pt2")
    if not os.path.exists(path):
        ids = torch.randint(1, 32000, (4, 128))
        batch = torch.export.Dim("batch", min=1, max=256)
        program = torch.export.export(encoder(), (ids, torch.ones_like(ids)), dynamic_shapes={
            "input_ids": {0: batch}, "attention_mask": {0: batch}})
        torch.export.save(program, path)
    return path


def write_mobilenet(out):
    """The MobileNetV2 fixture's definition with its batch norms' statistics taken from 64 random
    images (train mode, cumulative averages, no weight changed), then exported. With the
    initial statistics (mean 0, variance 1) its outputs fall to ~3e-9, below any int8 scale, so
    that every int8 point is guarded out for a reason no trained model has (stop 75)."""
    import torch

    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
    import fixture_models

    path = os.path.join(out, "mobilenet_v2_bn.pt2")
    if not os.path.exists(path):
        torch.manual_seed(0)
        model = fixture_models.mobilenet_v2()
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.reset_running_stats()
                m.momentum = None
        model.train()
        with torch.no_grad():
            for _ in range(4):
                model(torch.rand(16, 3, 224, 224))
        model.eval()
        example = torch.rand(4, 3, 224, 224)
        program = torch.export.export(model, (example,), dynamic_shapes=(
            {0: torch.export.Dim("batch", min=1, max=256)},))
        torch.export.save(program, path)
    return path


def spread(values):
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def one_model(tp, label, program, flags, spec, cnn, budget, rounds, seconds, out):
    tune_dir = os.path.join(out, f"tune-{label}")
    subprocess.run(["rm", "-rf", tune_dir], check=True)
    started = time.perf_counter()
    tune = subprocess.run([tp, "tune", program, *flags, "--batch", str(BATCH), "--budget", budget,
                           "--out", tune_dir, "--json", "--quiet"], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if not tune.stdout.strip():
        raise SystemExit(f"tune of {label} failed ({tune.returncode}): {tune.stderr.strip()[-600:]}")
    winner = json.loads(tune.stdout)["winner"]
    points = [json.loads(line) for line in open(os.path.join(tune_dir, "results.jsonl"))]
    measured = [p for p in points if p.get("record") == "point" and p.get("status") != "failed"]
    engines = sorted({p["key"].split(",")[0] for p in measured
                      if p["key"].startswith(("runtime=onnxruntime", "runtime=openvino"))})
    int8 = [p for p in points if p.get("record") == "point" and "precision=int8-" in p["key"]]
    print(f"   {label}: tune ({budget}) {wall:.0f} s, {len(measured)} points measured, engines "
          f"tried: {', '.join(e.split('=')[1] for e in engines) or 'none'}; int8 points: "
          f"{', '.join(p.get('status', '?') for p in int8) or 'none'}; winner {winner}")
    names = ["compile", "compile-cl"] if cnn else ["compile"]
    if os.environ.get("BENCH_ENGINES_AUTOTUNE", "1") != "0":
        names += ["autotune", "autotune-cl"] if cnn else ["autotune"]
    names += ["ort", "openvino"]
    rows = []
    for r in range(rounds):
        sides = ["tune"] + names
        row = {}
        for name in (sides if r % 2 == 0 else list(reversed(sides))):
            if name == "tune":
                row[name] = torchperf_bench(tp, program, flags, winner, seconds)
                continue
            row[name], failed = hand(name, program, spec, seconds)
            if failed:
                print(f"     {name} failed: {failed}")
        rows.append(row)
        print(f"     round {r + 1}: " + ", ".join(f"{n} {row[n]:,.1f}" for n in sides
                                                  if row.get(n)) + " samples/s")
    best = [max((row[n], n) for n in names if row.get(n)) for row in rows]
    over = [row["tune"] / b for row, (b, _) in zip(rows, best)]
    print(f"     tune's winner / the best hand side of each round ({', '.join(n for _, n in best)}): "
          f"{spread(over)} (target >= 1.0)")
    return {"winner": winner, "wall_s": wall, "points": len(measured), "engines": engines,
            "int8": [(p["key"], p.get("status")) for p in int8], "rounds": rows,
            "over_best": over}


def main():
    if sys.argv[1] == "--side":
        side(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
        return
    tp, fixtures, budget, rounds, seconds, out = sys.argv[1:7]
    rounds, seconds = int(rounds), float(seconds)
    os.makedirs(out, exist_ok=True)
    encoder_flags = ["--input", "input_ids=int64:128@1..32000", "--input",
                     "attention_mask=int64:128@1..2"]
    models = [("resnet18", os.path.join(fixtures, "resnet18_dynamic.pt2"),
               ["--input", "3x224x224"], "3x224x224", True),
              ("mobilenet_v2", os.path.join(fixtures, "mobilenet_v2_dynamic.pt2"),
               ["--input", "3x224x224"], "3x224x224", True),
              ("encoder", write_encoder(out), encoder_flags, "encoder", False)]
    if os.environ.get("BENCH_ENGINES_MODELS", "").find("mobilenet_v2_bn") >= 0:
        models.append(("mobilenet_v2_bn", write_mobilenet(out), ["--input", "3x224x224"],
                       "3x224x224", True))
    only = os.environ.get("BENCH_ENGINES_MODELS")
    results = {}
    for label, program, flags, spec, cnn in models:
        if only and label not in only.split(","):
            continue
        results[label] = one_model(tp, label, program, flags, spec, cnn, budget, rounds, seconds,
                                   out)
    with open(os.path.join(out, "engines_vs_hand.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

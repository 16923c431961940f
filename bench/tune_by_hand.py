#!/usr/bin/env python3
"""What a careful Python user does by hand: apply each combination of the same settings torchperf
tune sweeps to the same TorchScript file, time each with torch.utils.benchmark, keep the fastest
that passes the same accuracy guard (cosine >= 0.999 and top-1 agreement >= 99% against the fp32
eval/no_grad output). `make bench` runs it beside `torchperf tune` and compares the two winners.

  search  MODEL SHAPE SPACE SECONDS        -> JSON: the best configuration and every result
  measure MODEL SHAPE CONFIG SECONDS       -> JSON: samples/s of one configuration

SPACE and CONFIG use torchperf's syntax ("threads=1,2;grad=no_grad,inference" and
"threads=1,batch=8,…"); knobs: threads, batch, mode, grad, precision, format, graph."""
import contextlib
import itertools
import json
import sys

import torch
import torch.utils.benchmark as benchmark

DEFAULTS = {"threads": "1", "batch": "1", "mode": "eval", "grad": "on", "precision": "fp32",
            "format": "contiguous", "graph": "eager"}


def prepared(path, shape, config):
    """The model and input with the configuration's one-time transforms applied, as torchperf does."""
    torch.set_num_threads(int(config["threads"]))
    model = torch.jit.load(path)
    model.train(config["mode"] == "train")
    torch.manual_seed(0)
    x = torch.randn(int(config["batch"]), *shape)
    if config["precision"] == "bf16":
        model = model.to(torch.bfloat16)
        x = x.to(torch.bfloat16)
    if config["format"] == "channels_last":
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    if config["graph"] in ("frozen", "frozen-opt"):
        model = torch.jit.freeze(model.eval())
        if config["graph"] == "frozen-opt":
            model = torch.jit.optimize_for_inference(model)
    return model, x


def call_context(config):
    stack = contextlib.ExitStack()
    grad = config["grad"]
    stack.enter_context(torch.inference_mode() if grad == "inference"
                        else torch.no_grad() if grad == "no_grad" else contextlib.nullcontext())
    if config["precision"] == "bf16-autocast":
        stack.enter_context(torch.autocast("cpu", dtype=torch.bfloat16))
    return stack


def run(model, x, config):
    with call_context(config):
        return model(x)


def measure(path, shape, config, seconds):
    model, x = prepared(path, shape, config)
    for _ in range(3):  # the profiling executor optimises after its first runs
        out = run(model, x, config)
    timer = benchmark.Timer(stmt="run(model, x, config)",
                            globals={"run": run, "model": model, "x": x, "config": config},
                            num_threads=int(config["threads"]))
    m = timer.blocked_autorange(min_run_time=seconds)
    return int(config["batch"]) / m.median, out


def passes_guard(out, reference):
    a, b = out.float().flatten(), reference.float().flatten()
    cosine = float(torch.nn.functional.cosine_similarity(a, b, dim=0))
    top1 = float((out.float().argmax(-1) == reference.argmax(-1)).float().mean())
    return cosine >= 0.999 and top1 >= 0.99, cosine, top1


def parse_config(text):
    config = dict(DEFAULTS)
    for part in filter(None, text.split(",")):
        k, v = part.split("=")
        config[k] = v
    return config


def search(path, shape, space_text, seconds):
    axes = {k: [v] for k, v in DEFAULTS.items()}
    for part in filter(None, space_text.split(";")):
        k, values = part.split("=")
        axes[k] = values.split(",")
    references, results = {}, []
    for values in itertools.product(*axes.values()):
        config = dict(zip(axes.keys(), values))
        if config["mode"] == "train" and config["graph"] != "eager":
            continue
        batch = config["batch"]
        if batch not in references:
            ref_config = dict(DEFAULTS, batch=batch, grad="no_grad")
            model, x = prepared(path, shape, ref_config)
            references[batch] = run(model, x, ref_config)
        throughput, out = measure(path, shape, config, seconds)
        ok, cosine, top1 = passes_guard(out, references[batch])
        results.append({"config": ",".join(f"{k}={v}" for k, v in config.items()),
                        "samples_per_s": throughput, "passes": ok, "cosine": cosine, "top1": top1})
    best = max((r for r in results if r["passes"]), key=lambda r: r["samples_per_s"])
    return {"best": best, "results": results, "torch": torch.__version__}


if __name__ == "__main__":
    command, path, shape_text, arg, seconds = sys.argv[1:6]
    shape = [int(d) for d in shape_text.split("x")]
    if command == "search":
        print(json.dumps(search(path, shape, arg, float(seconds))))
    else:
        config = parse_config(arg)
        throughput, _ = measure(path, shape, config, float(seconds))
        print(json.dumps({"config": arg, "samples_per_s": throughput}))

"""make bench, section 23: a tune that answers within its budget on work of real size (issue 60).

An encoder of our own (not a built-in: 6 pre-norm layers, d 384, 6 heads, inputs by name,
`input_ids` and `attention_mask`, exported with a dynamic batch and length) over a file of 2,048
request lengths (lognormal, median 41, a tail past 400, the longest 450), batch 16. `torchperf
tune --budget BUDGET` runs first, alone, over the whole file; then its winner, run by `torchperf
bench` over every batch (--timed-batches 0) of the file's first 512 requests (a pass over all
2,048 takes ~35 s on 2 cores), against the loops a careful person writes in Python over the same
512, each side in its own process, alternated rounds, useful tokens/s over the whole of them:

  sorted-eager      each window of 256 requests sorted by length, each batch padded to its
                    longest, eager fp32 under inference_mode
  sorted-dynamic    the same under torch.compile(dynamic=True)
  sorted-static32   padded to a multiple of 32, torch.compile(dynamic=False): one graph a width
  sorted-ort        the same sorted batches through ONNX Runtime (the program exported by
                    torch.onnx's dynamo exporter, its batch and length dynamic; the session's
                    defaults: every optimisation, the machine's cores)
  sorted-openvino   the same through OpenVINO (openvino.convert_model of the program, compiled
                    for the CPU with its defaults; issue 84: this loop ran 10,328-10,922 useful
                    tokens/s where two tunes crowned 5,496 and 8,158)

    python bench/tune_in_budget.py TORCHPERF BUDGET ROUNDS OUT
    python bench/tune_in_budget.py --side NAME MODEL_DIR PASSES   (one hand-written side: JSON)

Prints the tune's points measured, its wall time and unspent-budget note, each side per round,
and tune's winner over the best hand-written side of each round (target >= 1.0, >= 30 points).
"""

import json
import math
import os
import statistics
import subprocess
import sys
import time

BATCH, WINDOW, VOCAB, LONGEST = 16, 256, 32000, 450
LAYERS, HIDDEN, HEADS, FFN = 6, 384, 6, 1536
INPUTS = ["--input", f"input_ids=int64:S@1..{VOCAB}", "--input", "attention_mask=int64:S@1..2"]


def encoder():
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
            self.qkv, self.out = nn.Linear(HIDDEN, 3 * HIDDEN), nn.Linear(HIDDEN, HIDDEN)
            self.ffn = nn.Sequential(nn.Linear(HIDDEN, FFN), nn.GELU(), nn.Linear(FFN, HIDDEN))

        def forward(self, x, bias):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, HEADS, HIDDEN // HEADS).unbind(2)
            a = torch.nn.functional.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=bias)
            x = x + self.out(a.transpose(1, 2).reshape(b, s, HIDDEN))
            return x + self.ffn(self.norm2(x))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.position = nn.Embedding(VOCAB, HIDDEN), nn.Embedding(512, HIDDEN)
            self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
            self.norm = nn.LayerNorm(HIDDEN)

        def forward(self, input_ids, attention_mask):
            s = input_ids.shape[1]
            x = self.embed(input_ids) + self.position(torch.arange(s, device=input_ids.device))
            bias = ((1 - attention_mask[:, None, None, :].to(x.dtype)) * -1e4)
            for layer in self.layers:
                x = layer(x, bias)
            return self.norm(x)

    torch.manual_seed(0)
    return Encoder().eval()


def write_model(folder):
    import torch

    path = os.path.join(folder, "encoder.pt2")
    if os.path.exists(path):
        return path
    model = encoder()
    ids = torch.randint(1, VOCAB, (4, 40))
    batch, length = torch.export.Dim("batch", min=1, max=256), torch.export.Dim("S", min=2, max=512)
    program = torch.export.export(model, (ids, torch.ones_like(ids)), dynamic_shapes={
        "input_ids": {0: batch, 1: length}, "attention_mask": {0: batch, 1: length}})
    torch.export.save(program, path)
    return path


def write_lengths(path, count=2048, seed=0):
    """Lognormal lengths (median 41, sigma 0.95) within 2..450, one a line, the longest 450."""
    import random

    rng = random.Random(seed)
    lengths = []
    while len(lengths) < count:
        n = round(math.exp(math.log(41) + 0.95 * rng.gauss(0, 1)))
        if 2 <= n <= LONGEST:
            lengths.append(n)
    lengths[rng.randrange(count)] = LONGEST
    with open(path, "w") as f:
        f.write("\n".join(map(str, lengths)) + "\n")
    return lengths


# ---------------------------------------------------------------------------------------------
# One hand-written side, in its own process: every batch of the stream, in its arrival order.

HEAD = 512  # the requests the comparison's sides run


def side(name, folder, passes):
    import torch

    lengths = [int(line) for line in open(os.path.join(folder, "lengths-head.txt")) if line.strip()]
    model = encoder()
    fn = model
    if name == "sorted-dynamic":
        fn = torch.compile(model, dynamic=True)
    elif name == "sorted-static32":
        fn = torch.compile(model, dynamic=False)
    elif name in ("sorted-ort", "sorted-openvino"):
        fn = engine_call(name, folder)
    gen = torch.Generator().manual_seed(0)
    batches, useful = [], sum(lengths)
    for w in range(0, len(lengths), WINDOW):
        window = sorted(lengths[w:w + WINDOW])
        for b in range(0, len(window), BATCH):
            members = window[b:b + BATCH]
            width = max(members)
            if name == "sorted-static32":
                width = min(512, (width + 31) // 32 * 32)
            ids = torch.zeros(len(members), width, dtype=torch.long)
            mask = torch.zeros(len(members), width, dtype=torch.long)
            for j, n in enumerate(members):
                ids[j, :n] = torch.randint(1, VOCAB, (n,), generator=gen)
                mask[j, :n] = 1
            batches.append((ids, mask))

    def one_pass():
        with torch.inference_mode():
            for ids, mask in batches:
                fn(ids, mask)

    started = time.perf_counter()
    one_pass()  # every shape met once: compiles, allocations (a one-off cost, reported apart)
    warm_s = time.perf_counter() - started
    times = []
    for _ in range(passes):
        start = time.perf_counter()
        one_pass()
        times.append(time.perf_counter() - start)
    print(json.dumps({"side": name, "tokens_per_s": useful / statistics.median(times),
                      "passes": times, "warm_s": warm_s, "threads": torch.get_num_threads()}))


def engine_call(name, folder):
    """The program converted as its engine's documentation shows, run on torch tensors."""
    import torch

    program = torch.export.load(os.path.join(folder, "encoder.pt2"))
    if name == "sorted-ort":
        import onnxruntime as ort

        path = os.path.join(folder, "encoder.onnx")
        if not os.path.exists(path):
            ids = torch.randint(1, VOCAB, (4, 40))
            torch.onnx.export(program, (ids, torch.ones_like(ids)), path, dynamo=True)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return lambda *xs: session.run(None, {n: x.numpy() for n, x in zip(names, xs)})
    import openvino as ov

    compiled = ov.Core().compile_model(ov.convert_model(program), "CPU")
    request = compiled.create_infer_request()
    return lambda *xs: request.infer([x.numpy() for x in xs])


# ---------------------------------------------------------------------------------------------
# The benchmark.

def torchperf_side(tp, model, lengths_path, config, seconds):
    run = subprocess.run([tp, "bench", model, *INPUTS, "--dim", f"S=file:{lengths_path}",
                          "--config", config, "--timed-batches", "0", "--time", str(seconds),
                          "--json", "--quiet"], capture_output=True, text=True)
    if not run.stdout.strip():
        raise SystemExit(f"torchperf bench failed ({run.returncode}): {run.stderr.strip()[-600:]}")
    return json.loads(run.stdout)["measurement"]["stream"]["tokens_per_s"]


def hand_side(name, folder, passes):
    run = subprocess.run([sys.executable, os.path.abspath(__file__), "--side", name, folder,
                          str(passes)], capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"side {name} failed: {run.stderr.strip()[-600:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])["tokens_per_s"]


def spread(values):
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main():
    if sys.argv[1] == "--side":
        side(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    tp, budget, rounds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    os.makedirs(out, exist_ok=True)
    model = write_model(out)
    lengths_path = os.path.join(out, "lengths.txt")
    lengths = write_lengths(lengths_path)
    head_path = os.path.join(out, "lengths-head.txt")
    with open(head_path, "w") as f:
        f.write("\n".join(map(str, lengths[:HEAD])) + "\n")
    ordered = sorted(lengths)
    print(f"   {len(lengths)} lengths: median {statistics.median(lengths)}, p99 "
          f"{ordered[int(0.99 * len(ordered))]}, longest {max(lengths)}; batch {BATCH}; encoder "
          f"{LAYERS} layers, d {HIDDEN}")
    tune_dir = os.path.join(out, "tune")
    subprocess.run(["rm", "-rf", tune_dir], check=True)
    started = time.perf_counter()
    tune = subprocess.run([tp, "tune", model, *INPUTS, "--dim", f"S=file:{lengths_path}",
                           "--batch", str(BATCH), "--budget", budget, "--out", tune_dir,
                           "--json", "--quiet"], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if not tune.stdout.strip():
        raise SystemExit(f"tune failed ({tune.returncode}): {tune.stderr.strip()[-600:]}")
    result = json.loads(tune.stdout)
    winner = result["winner"]
    points = [json.loads(line) for line in open(os.path.join(tune_dir, "results.jsonl"))]
    measured = {p["key"]: p for p in points if p.get("record") == "point" and p.get("status") != "failed"}
    early = sum(1 for p in measured.values() if (p.get("metrics") or {}).get("stopped_early"))
    print(f"   tune ({budget}): {wall:.0f} s, {len(measured)} points measured "
          f"({early} stopped early behind the leader; target >= 30); winner {winner}")
    for note in result.get("notes", []):
        print(f"     note: {note}")
    hand = ["sorted-eager", "sorted-dynamic", "sorted-static32", "sorted-ort", "sorted-openvino"]
    sides = ["torchperf"] + hand
    rows = []
    for r in range(rounds):
        order = sides if r % 2 == 0 else list(reversed(sides))
        row = {}
        for name in order:
            row[name] = (torchperf_side(tp, model, head_path, winner, 5) if name == "torchperf"
                         else hand_side(name, out, 3))
        rows.append(row)
        print(f"   round {r + 1} (the first {HEAD} requests): " +
              ", ".join(f"{n} {row[n]:,.0f}" for n in sides) + " useful tokens/s")
    over_best = [row["torchperf"] / max(row[n] for n in hand) for row in rows]
    best_names = [max(hand, key=lambda n: row[n]) for row in rows]
    print(f"   tune's winner / the best hand-written side of each round ({', '.join(best_names)}): "
          f"{spread(over_best)} (target >= 1.0)")
    with open(os.path.join(out, "tune_in_budget.json"), "w") as f:
        json.dump({"winner": winner, "wall_s": wall, "points": len(measured),
                   "stopped_early": early, "rounds": rows, "over_best": over_best,
                   "notes": result.get("notes", [])}, f, indent=1)


if __name__ == "__main__":
    main()

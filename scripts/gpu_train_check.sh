#!/usr/bin/env bash
# The GPU training check (the training ladder's issue), on a machine with an NVIDIA GPU and
# PyTorch in its python3: run from a copy of this repository with the bundle scripts/gpu_build.sh
# made.
#
#   scripts/gpu_train_check.sh BUNDLE OUT [LADDER_BUDGET_S] [DEVICE]
#
# The issue's command (`train builtin:resnet18 --device cuda --data synthetic-cifar --batch 64
# --ladder --allow-semantic-changes`, with --budget), then its top rung against the same loop
# climbed by hand in Python (bench/train_python.py: loader workers, pin_memory with non_blocking,
# cudnn.benchmark, uint8 transfer, set_to_none, channels_last, AMP, torch.compile), alternated, in
# fresh processes. Each step has its own time limit and writes its log under OUT. About 8 minutes
# with the default budget of 240 s. DEVICE=cpu runs the same on a machine without a GPU;
# GPU_TRAIN_ROUNDS (default 6) sets the rounds.
set -u
BUNDLE=$(cd "$1" && pwd)
OUT=$2
BUDGET=${3:-240}
DEVICE=${4:-cuda}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
started=$(date +%s)
step() { echo "=== [$(( $(date +%s) - started )) s] $*"; }

. scripts/gpu_env.sh
SIZE=${GPU_TRAIN_SIZE:-224}

# GPU_TRAIN_TOP=CONFIG: the ladder's top rung from an earlier run; only the rounds run.
if [ -n "${GPU_TRAIN_TOP:-}" ]; then
top=$GPU_TRAIN_TOP
else
step "train --ladder --allow-semantic-changes on $DEVICE (budget ${BUDGET} s)"
timeout $(( BUDGET + 180 )) "$TP" train builtin:resnet18 --device "$DEVICE" --data synthetic-cifar \
  --image-size "$SIZE" --batch 64 --ladder --allow-semantic-changes --steps 10 --budget "$BUDGET" \
  --json > "$OUT/ladder.json" 2> "$OUT/ladder.log"
echo "exit $?"; tail -n 20 "$OUT/ladder.log"
top=$(python3 - "$OUT/ladder.json" <<'PY'
import json, sys
ladder = json.load(open(sys.argv[1]))["ladder"]
first = ladder["rungs"][0]["breakdown"]
print(f"loop as given: {first['samples_per_second']:.1f} samples/s; data wait "
      f"{first['phases']['data_wait']['share']:.1%}, copy {first['phases']['copy']['share']:.1%}",
      file=sys.stderr)
for a in ladder["attempts"]:
    lo, hi = a["speedup"]["ci"]
    compiled = f", compile {a['compile_s']:.1f} s" if a.get("compile_s") is not None else ""
    print(f"tried {a['change']}: {a['speedup']['ratio']:.3f}x ({lo}-{hi}){compiled}"
          f"{' kept' if a['kept'] else ''}", file=sys.stderr)
print(f"climbed {ladder['rungs'][-1]['cumulative']:.3f}x; stopped: {ladder['stop_reason']}",
      file=sys.stderr)
print(ladder["rungs"][-1]["configuration"])
PY
)
fi
echo "top rung: ${top:-the loop as given}"

ROUNDS=${GPU_TRAIN_ROUNDS:-6}
step "the top rung against the loop climbed by hand in Python, $ROUNDS alternated rounds"
cores=$(nproc)
hand=(--device "$DEVICE" --threads "$cores" --workers "$(( cores > 8 ? 8 : (cores > 2 ? cores - 1 : 1) ))"
      --transfer uint8 --zero-grad set_to_none --format channels_last --compile default)
if [ "$DEVICE" != cpu ]; then
  hand+=(--pin-memory --non-blocking --cudnn-benchmark on)
  python3 -c 'import torch,sys; sys.exit(0 if torch.cuda.is_bf16_supported() else 1)' \
    && hand+=(--amp bf16) || hand+=(--amp fp16)
fi
echo "by hand: ${hand[*]}"
: > "$OUT/rounds.txt"
for r in $(seq "$ROUNDS"); do
  tp_run() {
    timeout 150 "$TP" train builtin:resnet18 --device "$DEVICE" --data synthetic-cifar \
      --image-size "$SIZE" --config "$top" --steps 30 --warmup 5 --quiet --json 2>> "$OUT/rounds.log" |
      python3 -c 'import json,sys; print("torchperf", json.load(sys.stdin)["breakdown"]["samples_per_second"])' \
      >> "$OUT/rounds.txt"
  }
  py_run() {
    timeout 150 python3 bench/train_python.py builtin:resnet18 --image-size "$SIZE" --batch 64 \
      "${hand[@]}" --steps 30 --warmup 5 2>> "$OUT/rounds.log" |
      python3 -c 'import json,sys; print("python", json.load(sys.stdin)["samples_per_s"])' \
      >> "$OUT/rounds.txt"
  }
  if (( r % 2 )); then tp_run; py_run; else py_run; tp_run; fi
done
python3 - "$OUT/rounds.txt" <<'PY'
import math, statistics, sys
tp, py = [], []
for line in open(sys.argv[1]):
    who, value = line.split()
    (tp if who == "torchperf" else py).append(float(value))
logs = [math.log(a / b) for a, b in zip(tp, py)]
if len(logs) < 2:
    sys.exit("too few rounds finished: see rounds.log")
# Two-sided 95% Student t quantiles by degrees of freedom (no SciPy on the GPU machine).
t95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
half = t95.get(len(logs) - 1, 1.96) * statistics.stdev(logs) / math.sqrt(len(logs))
mean = statistics.mean(logs)
print("torchperf", " ".join(f"{v:.0f}" for v in tp), "| python", " ".join(f"{v:.0f}" for v in py))
print(f"top rung / Python by hand = {math.exp(mean):.3f} (95% CI {math.exp(mean - half):.3f}-"
      f"{math.exp(mean + half):.3f}, {len(logs)} rounds; target >= 0.95)")
PY
step "done"

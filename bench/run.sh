#!/usr/bin/env bash
# `make bench`: speed checks measured side by side in one run, printed as ratios.
#   1. harness overhead: the same forward in a bare loop and through torchperf's timed iteration;
#   2. torchperf vs PyTorch's torch.utils.benchmark on ResNet-18 and the built-in encoder, at 1
#      thread and at every usable core (they should agree within 7%: 0.93-1.07), alternated A B A B so drift
#      hits both;
#   3. repeatability: bench five times on one configuration, the CV of the reported medians;
#   4. the winner of `torchperf tune` vs the best a hand-written Python search finds over the same
#      settings on the same file (bench/tune_by_hand.py), each winner re-measured alternately;
#   5. the training input pipeline alone: torchperf's BatchLoader vs PyTorch's DataLoader on the
#      same synthetic images and transforms, at 0, 1 and 2 workers;
#   6. a training step: `torchperf train` vs a plain Python loop (bench/train_python.py) on the same
#      TorchScript ResNet-18 file and saved tensors, at 1 thread and every usable core;
#   7. `torchperf train --ladder --allow-semantic-changes` on builtin:resnet18 (synthetic CIFAR,
#      BENCH_DEVICE=cuda on a GPU) vs the same loop climbed by hand in Python up to torch.compile,
#      each end re-measured alternately;
#   8. tune's smart search vs the exhaustive sweep of the same space (about 50-150 points) on the
#      built-in models and a torchvision fixture: the winners head to head, the wall times;
#   9. int8 dynamic quantization: torchperf's precision=int8-dynamic vs PyTorch's own
#      quantize_dynamic_jit of the same TorchScript file (built-in MLP and encoder, batch 16), at 1
#      thread and every usable core, alternated;
#  10. serving: serve-tune's winner (the highest rate within a p99 objective) against bench's
#      offline throughput of the same settings and against one request per forward (ResNet-18,
#      encoder).
#  11. trace: `torchperf trace` (overview, every view and the advice) on a generated trace of about
#      1 GB built from the real A100 trace's events, plain and gzip, against Python's json.load of
#      the same file (what Holistic Trace Analysis does first): seconds and peak memory, alternated
#      A B A B; then HTA itself once on the plain file, its time, memory and temporal breakdown
#      against torchperf's.
#  12. process-level settings: each value of the worker knobs (ATen's, oneDNN's and MKL's ISA,
#      the allocator, OpenMP's wait policy and binding) against the default, in two processes;
#  13. the memory cap's watchdog thread (RSS read every 20 ms): bench with its default cap against
#      bench --memory-cap none, alternated, at 1 thread and every usable core.
#  14. AOTInductor: the same package run by `torchperf bench --graph aoti` and from Python
#      (aoti_load_package) on ResNet-18 at batch 16, alternated (within 10%); the best AOTI point
#      against the best TorchScript point of ResNet-18 and MobileNetV2, with each compile's time.
#  15. the python runtime: `torchperf bench --runtime python` on ResNet-18's and an MLP's programs against the
#      same program timed with torch.utils.benchmark in a plain script, eager (within 5%) and under
#      torch.compile (within 7%), at 1 thread and every usable core, alternated A B A B.
#  16. the Python API: torchperf.tune then result.apply on an MLP and a ResNet-18-like module, the
#      returned callable timed with torch.utils.benchmark in the same run against the throughput
#      tune reported for its winner (within 7%).
#  17. tune with a 5-minute budget (compiles included, from an empty cache) on the fixtures as
#      torch.export programs (ResNet-18, MobileNetV2, the built-in encoder) against what a careful
#      person tries by hand in Python (bench/hand_tuned_program.py: TorchScript frozen-opt and
#      torch.compile, each with and without channels_last), the winners re-measured alternately;
#      then ResNet-18's tune again on the same cache: what its plan says, and its time.
#  18. the search engine judged against a library: tune's ridge search and Optuna (TPE, GP)
#      replayed on exhaustive sweeps' journals (tune's default space of a TorchScript ResNet-18,
#      and a program's: the encoder at batch 16), same protocol and same budget (10% of the
#      sweep's time), 20 seeds each (5 for the slower GP): each winner's share of the exhaustive
#      winner.
#  19. a point through Ray against the same point here.
#  20. the promise in the caller's process: torchperf.tune + result.apply on the README's MLP and a
#      small encoder of our own, the applied callable timed here against the throughput tune
#      stated (target >= 0.95) and against eval() + inference_mode at the same threads (target
#      >= 1.0), alternated rounds.
#  21. lengths that vary: tune's winner on a stream against padding to 512 and a careful person's Python.
#  22. DDP ranks: the ladder's top rung against DDP by hand; the checkpointing rung under a memory cap.
#  23. a tune within its budget on work of real size: an encoder of our own (6 layers, d 384, inputs
#      by name) over 2,048 request lengths, batch 16, --budget 5m: points measured, the budget's use,
#      and its winner over the whole stream against a careful person's sorted loops in Python.
#  24. the figure tune states against torch.utils.benchmark of the same configuration in a fresh
#      process, for a CNN fixture at batch 16 in each runtime and format (within 5%).
#  25. engines in the tune: its winner (5-minute budget, ONNX Runtime and OpenVINO in its space) on
#      two CNN fixtures and an encoder of our own against the best of a hand set (torch.compile
#      default and max-autotune, +/- channels_last, ONNX Runtime, OpenVINO), alternated rounds.
#  28. text generation: tune hf:FOLDER's winner (5-minute budget) on two decoders of our own (Llama-style
#      with grouped-query attention, GPT-2-style; 8 layers, hidden 512), prompts of 128, 64 new tokens,
#      batch 1 and 8, against a hand set (HF eager fp32, eager bf16, static cache + torch.compile,
#      OpenVINO through optimum-intel), each side in its own process, alternated rounds.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
tp_binary="$build/torchperf"
# The Python side's scripts read input specs through the core (python/torchperf/feed.py).
export TORCHPERF_CLI="$tp_binary"
# torchperf itself, without the TorchScript deprecation note it prints for every fixture file.
# Exit 3 (INVALID: the run completed, but a stopping rule was not met or the output has NaN/Inf)
# still prints its JSON, which each section reads, "valid" and "invalid_reason" included.
tp() {
  local rc=0
  "$tp_binary" "$@" 2> >(grep -v '^torchperf: note: TorchScript is deprecated' >&2) || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ]
}
tp=tp
# The .venv's Python: the same torch (2.13.0) torchperf links, for the peers and the fixtures.
python=${BENCH_PYTHON:-$root/.venv/bin/python}
fixtures="$build/bench-fixtures"
[ -f "$fixtures/mobilenet_v2_dynamic.pt2" ] || "$python" "$root/scripts/make_fixtures.py" "$fixtures" > /dev/null 2>&1
model="$fixtures/resnet18_scripted.pt"
batch=${BENCH_BATCH:-8}
threads=${BENCH_THREADS:-1}
seconds=${BENCH_SECONDS:-5}
rounds=${BENCH_ROUNDS:-5}
# glibc returns freed activation memory to the kernel depending on each process's heap history:
# identical runs here swing between ~0 and ~19k minor page faults per call (16 vs 19.5 samples/s).
# Tools are compared under equal, pinned allocator settings (docs/methodology.md). The mmap
# threshold stops at 32 MiB, so a larger activation (MobileNetV2's 77 MB at batch 16) was still
# mapped afresh in most processes and not in others (section 24, stop 72): MALLOC_MMAP_MAX_=0
# serves every size from the heap.
export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-33554432}
export MALLOC_TRIM_THRESHOLD_=${MALLOC_TRIM_THRESHOLD_:-68719476736}
export MALLOC_MMAP_MAX_=${MALLOC_MMAP_MAX_:-0}
# BENCH_ONLY=4 (or "1 3", …) runs only those sections.
only=" ${BENCH_ONLY:-1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28} "
section() { [[ "$only" == *" $1 "* ]]; }

# print_rounds LABEL_A LABEL_B "A samples/s per round" "B samples/s per round" [TOLERANCE]:
# each round's ratio, then their geometric mean with a 95% Student t interval (the estimator
# torchperf itself uses for paired rounds), and whether it is within TOLERANCE of 1.
print_rounds() {
  "$python" - "$@" <<'PY'
import math, statistics, sys
label_a, label_b = sys.argv[1], sys.argv[2]
a_runs = [float(v) for v in sys.argv[3].split()]
b_runs = [float(v) for v in sys.argv[4].split()]
for i, (a, b) in enumerate(zip(a_runs, b_runs), 1):
    print(f"  round {i}: {label_a} {a:8.2f} samples/s   {label_b} {b:8.2f} samples/s   ratio {a / b:.3f}")
logs = [math.log(a / b) for a, b in zip(a_runs, b_runs)]
n = len(logs)
mean = statistics.mean(logs)
# Two-sided 95% Student t quantiles by degrees of freedom (no SciPy here).
t = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}.get(n - 1, 2.0)
half = t * statistics.stdev(logs) / math.sqrt(n) if n > 1 else float("nan")
ratio, low, high = math.exp(mean), math.exp(mean - half), math.exp(mean + half)
verdict = ""
if len(sys.argv) > 5:
    tolerance = float(sys.argv[5])
    verdict = f" ({'within' if abs(ratio - 1) <= tolerance else 'OUTSIDE'} {tolerance:.0%})"
print(f"  {label_a} / {label_b} = {ratio:.3f} (95% CI {low:.3f}-{high:.3f}, geometric mean of {n} rounds){verdict}")
PY
}

if section 1; then
echo "== 1. harness overhead per iteration (builtin:mlp, batch 1, grad=no_grad)"
"$build/bench/harness_overhead" --benchmark_format=json --benchmark_repetitions=5 \
  --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
  > "$build/harness_overhead.json"
"$python" - "$build/harness_overhead.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["benchmarks"]
med = {r["run_name"].split("/")[0]: r["real_time"] for r in rows if r.get("aggregate_name") == "median"}
cv = {r["run_name"].split("/")[0]: r["real_time"] for r in rows if r.get("aggregate_name") == "cv"}
bare, timed, empty = med["BM_BareForward"], med["BM_TimedRunForward"], med["BM_EmptyIteration"]
print(f"  bare forward loop       {bare:10.0f} ns/iteration (CV {cv['BM_BareForward'] * 100:.1f}% over 5 interleaved repetitions)")
print(f"  torchperf timed run     {timed:10.0f} ns/iteration (CV {cv['BM_TimedRunForward'] * 100:.1f}%)")
print(f"  difference              {timed - bare:10.0f} ns/iteration ({(timed - bare) / bare * 100:+.2f}%)")
print(f"  empty harness iteration {empty:10.0f} ns (knob scopes entered and undone, no model)")
PY
fi

if section 2; then
# Each model at 1 thread and at every usable core, with the configuration the issue that found the
# thread-switching bias used (inference mode, frozen and optimised graph). Both tools read one
# inputs file and set their thread count once, before anything is timed.
cores=$(nproc)
"$tp" export builtin:encoder "$fixtures/encoder.pt" > /dev/null
"$python" - "$fixtures" "$batch" <<'PY'
import sys, torch
out, batch = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
torch.save(torch.randn(batch, 3, 224, 224), f"{out}/inputs_resnet18.pt")
torch.save((torch.randint(0, 1000, (batch, 32)), torch.ones(batch, 32, dtype=torch.int64)),
           f"{out}/inputs_encoder.pt")
PY
for name in resnet18 encoder; do
  file="$model"; [ "$name" = encoder ] && file="$fixtures/encoder.pt"
  for t in 1 "$cores"; do
    echo "== 2. torchperf vs torch.utils.benchmark: $name ($(basename "$file")), batch $batch, $t thread(s),"
    echo "      grad=inference graph=frozen-opt, alternated over $rounds rounds, both with"
    echo "      MALLOC_MMAP_THRESHOLD_=$MALLOC_MMAP_THRESHOLD_ MALLOC_TRIM_THRESHOLD_=$MALLOC_TRIM_THRESHOLD_ MALLOC_MMAP_MAX_=$MALLOC_MMAP_MAX_"
    tp_runs=(); py_runs=()
    for r in $(seq "$rounds"); do
      tp_runs+=("$("$tp" bench "$file" --inputs-file "$fixtures/inputs_$name.pt" --threads "$t" \
          --mode eval --grad inference --graph frozen-opt --time "$seconds" --quiet --json \
          | "$python" -c 'import json,sys; print(json.load(sys.stdin)["measurement"]["throughput_samples_per_s"])')")
      py_runs+=("$("$python" "$here/compare_python.py" "$file" "$fixtures/inputs_$name.pt" "$t" "$seconds" \
          inference frozen-opt 2>/dev/null \
          | "$python" -c 'import json,sys; print(json.load(sys.stdin)["samples_per_s"])')")
    done
    print_rounds "torchperf" "torch.utils.benchmark" "${tp_runs[*]}" "${py_runs[*]}" 0.07  # the issue: 0.93-1.07 at each thread count
  done
done
fi

repeat() {
  echo "== 3. repeatability: bench $*, five runs"
  local medians=()
  for r in 1 2 3 4 5; do
    medians+=("$("$tp" bench "$@" --quiet --json \
        | "$python" -c 'import json,sys; print(json.load(sys.stdin)["measurement"]["iteration_ns"]["median"])')")
  done
  "$python" - "${medians[*]}" <<'PY'
import statistics, sys
m = [float(v) / 1e6 for v in sys.argv[1].split()]
cv = statistics.stdev(m) / statistics.mean(m)
print("  medians (ms/call): " + ", ".join(f"{v:.3f}" for v in m))
print(f"  CV of the medians = {cv * 100:.2f}% (target <= 1%)")
PY
}
if section 3; then
repeat builtin:mlp --batch 64 --threads "$threads" --grad inference --time "$seconds"
repeat builtin:resnet18 --batch 8 --threads "$threads" --grad inference --graph frozen-opt --time "$seconds"
fi

if section 4; then
echo "== 4. torchperf tune's winner vs a hand-written Python search over the same space"
# bf16 is left out by default: emulated on CPUs without it, each bf16 point takes ~20 s here.
space=${BENCH_SPACE:-"batch=$batch;mode=eval;precision=fp32;threads=1,2;grad=no_grad,inference;format=contiguous,channels_last;graph=eager,frozen-opt"}
echo "   $model, space $space"
tune_out="$build/bench-tune"
rm -rf "$tune_out"
start=$(date +%s)
"$tp" tune "$model" --input 3x224x224 --space "$space" --time 1 --budget 0 --out "$tune_out" --quiet --json \
  > "$build/bench-tune.json" || true
tune_s=$(( $(date +%s) - start ))
winner=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["winner"] or "")' "$build/bench-tune.json")
[ -n "$winner" ] || { echo "  tune named no winner: see $build/bench-tune.json"; exit 1; }
start=$(date +%s)
"$python" "$here/tune_by_hand.py" search "$model" 3x224x224 "$space" 1 > "$build/bench-by-hand.json" 2>/dev/null
hand_s=$(( $(date +%s) - start ))
best=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["best"]["config"])' "$build/bench-by-hand.json")
echo "  tune winner        $winner   (sweep took ${tune_s} s, every point in its own process)"
echo "  Python best        $best   (search took ${hand_s} s)"
tp_runs=(); py_runs=()
for r in $(seq "$rounds"); do
  tp_runs+=("$("$tp" bench "$model" --input 3x224x224 --config "$winner" --time "$seconds" --quiet --json \
      | "$python" -c 'import json,sys; print(json.load(sys.stdin)["measurement"]["throughput_samples_per_s"])')")
  py_runs+=("$("$python" "$here/tune_by_hand.py" measure "$model" 3x224x224 "$best" "$seconds" 2>/dev/null \
      | "$python" -c 'import json,sys; print(json.load(sys.stdin)["samples_per_s"])')")
done
print_rounds "tune winner (torchperf bench)" "Python best (timed in Python)" "${tp_runs[*]}" "${py_runs[*]}"
fi

if section 5; then
loader_batches=${BENCH_LOADER_BATCHES:-30}
echo "== 5. training input pipeline: torchperf BatchLoader vs PyTorch DataLoader (synthetic-cifar,"
echo "      batch 32 resized to 224x224, $loader_batches batches timed after 5 untimed), median of 3 alternated runs"
loader_args=(--batch 32 --image-size 224 --batches "$loader_batches" --warmup 5)
# images_per_s torchperf|python WORKERS: one run in a fresh process (workers start untimed).
images_per_s() {
  local cmd=("$build/bench/torchperf_bench_loader")
  [ "$1" = torchperf ] || cmd=("$python" "$here/dataloader_python.py")
  "${cmd[@]}" --workers "$2" "${loader_args[@]}" \
    | "$python" -c 'import json,sys; print(json.load(sys.stdin)["images_per_s"])'
}
for workers in 0 1 2; do
  tp_runs=(); py_runs=()
  for r in 1 2 3; do
    # Alternate who goes first, so drift (heat, the other build) does not favour one side.
    if (( r % 2 )); then
      tp_runs+=("$(images_per_s torchperf "$workers")"); py_runs+=("$(images_per_s python "$workers")")
    else
      py_runs+=("$(images_per_s python "$workers")"); tp_runs+=("$(images_per_s torchperf "$workers")")
    fi
  done
  "$python" - "$workers" "${tp_runs[*]}" "${py_runs[*]}" <<'PY'
import statistics, sys
tp = statistics.median([float(v) for v in sys.argv[2].split()])
py = statistics.median([float(v) for v in sys.argv[3].split()])
print(f"  workers {sys.argv[1]}: torchperf {tp:8.1f} images/s   PyTorch DataLoader {py:8.1f} images/s"
      f"   ratio torchperf / PyTorch {tp / py:.3f}")
PY
done
fi

# train_samples_per_s ARGS...: one `torchperf train` run in a fresh process, its samples/s.
train_samples_per_s() {
  "$tp" train "$@" --quiet --json \
    | "$python" -c 'import json,sys; print(json.load(sys.stdin)["breakdown"]["samples_per_second"])'
}
python_train_samples_per_s() {
  "$python" "$here/train_python.py" "$@" 2>/dev/null \
    | "$python" -c 'import json,sys; print(json.load(sys.stdin)["samples_per_s"])'
}
train_steps=${BENCH_TRAIN_STEPS:-20}

if section 6; then
# The same file, the same saved batch of tensors (so no image pipeline differs), SGD with momentum,
# cross-entropy, the loss read every step; threads set once; equal MALLOC_* settings (above).
size=${BENCH_TRAIN_SIZE:-64}
"$python" - "$fixtures" "$size" <<'PY'
import sys, torch
out, size = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
torch.save((torch.randn(512, 3, size, size), torch.randint(0, 10, (512,))), f"{out}/train_{size}.pt")
PY
for t in 1 "$(nproc)"; do
  echo "== 6. a training step: torchperf train vs a plain Python loop, $(basename "$model") (TorchScript),"
  echo "      batch 16 of 3x${size}x${size} tensors, $t thread(s), $train_steps steps after 5, $rounds alternated rounds"
  args=(--batch 16 --threads "$t" --steps "$train_steps" --warmup 5)
  tp_runs=(); py_runs=()
  for r in $(seq "$rounds"); do
    if (( r % 2 )); then
      tp_runs+=("$(train_samples_per_s "$model" --data "tensors:$fixtures/train_$size.pt" "${args[@]}")")
      py_runs+=("$(python_train_samples_per_s "$model" --data "tensors:$fixtures/train_$size.pt" "${args[@]}")")
    else
      py_runs+=("$(python_train_samples_per_s "$model" --data "tensors:$fixtures/train_$size.pt" "${args[@]}")")
      tp_runs+=("$(train_samples_per_s "$model" --data "tensors:$fixtures/train_$size.pt" "${args[@]}")")
    fi
  done
  print_rounds "torchperf train" "Python loop" "${tp_runs[*]}" "${py_runs[*]}" 0.05
done
fi

if section 7; then
# torchperf climbs on its own; the Python side is the same loop climbed by hand the way the profiler
# guide climbs it (../shared/seeds/003): loader workers (every usable core but the training
# thread's, at least one), pin_memory with non_blocking and cudnn.benchmark on CUDA, uint8
# transfer, set_to_none, channels_last, AMP (bf16 where the device has it, else fp16 with a
# scaler), torch.compile — on the built-in's own Python definition, at the ladder's start batch
# (the ladder may end at another batch: samples/s are per sample either way). Both ends are then
# re-measured alternately, in fresh processes, at equal threads and steps.
size=${BENCH_LADDER_SIZE:-64}
device=${BENCH_DEVICE:-cpu}
echo "== 7. train --ladder --allow-semantic-changes on builtin:resnet18 (synthetic CIFAR at ${size}x${size}, $device)"
echo "      vs the same loop climbed by hand in Python"
ladder_start=$(date +%s)
"$tp" train builtin:resnet18 --device "$device" --data synthetic-cifar --image-size "$size" --ladder \
  --allow-semantic-changes --steps 10 --quiet --json > "$build/bench-ladder.json"
echo "  the ladder took $(( $(date +%s) - ladder_start )) s"
top=$("$python" - "$build/bench-ladder.json" <<'PY'
import json, sys
ladder = json.load(open(sys.argv[1]))["ladder"]
for a in ladder["attempts"]:
    lo, hi = a["speedup"]["ci"]
    ci = f"{lo:.2f}-{hi:.2f}" if lo is not None else "no interval"
    compiled = f", compile {a['compile_s']:.1f} s" if a.get("compile_s") is not None else ""
    print(f"  tried {a['change']}: {a['speedup']['ratio']:.3f}x ({ci}){compiled}{' kept' if a['kept'] else ''}",
          file=sys.stderr)
print(f"  ladder: {len(ladder['rungs']) - 1} kept change(s), {ladder['rungs'][-1]['cumulative']:.3f}x"
      f" over the loop as given; stopped: {ladder['stop_reason']}", file=sys.stderr)
if not any(a["change"].startswith("step=compile") for a in ladder["attempts"]):
    print("  NOTE: the ladder tried no torch.compile rung", file=sys.stderr)
print(ladder["rungs"][-1]["configuration"])
PY
)
echo "  top rung: ${top:-the loop as given}"
cores=$(nproc)
hand=(--device "$device" --threads "$cores" --workers "$(( cores > 2 ? cores - 1 : 1 ))" --transfer uint8
      --zero-grad set_to_none --format channels_last --compile default)
if [ "$device" != cpu ]; then
  hand+=(--pin-memory --non-blocking --cudnn-benchmark on)
  "$python" -c 'import torch,sys; sys.exit(0 if torch.cuda.is_bf16_supported() else 1)' \
    && hand+=(--amp bf16) || hand+=(--amp fp16)
elif grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
  hand+=(--amp bf16)
fi
echo "  Python by hand: builtin:resnet18, batch 32, ${hand[*]}"
# Ten alternated rounds (A B, then B A) of 15 steps, each side a fresh process: a shared machine's
# speed drifts by 20% within minutes, so short rounds and many of them.
tp_runs=(); py_runs=()
for r in $(seq "${BENCH_LADDER_ROUNDS:-10}"); do
  tp_side() {
    tp_runs+=("$(train_samples_per_s builtin:resnet18 --device "$device" --data synthetic-cifar \
        --image-size "$size" --config "$top" --steps 15 --warmup 3)")
  }
  py_side() {
    py_runs+=("$(python_train_samples_per_s builtin:resnet18 --image-size "$size" --batch 32 \
        "${hand[@]}" --steps 15 --warmup 3)")
  }
  if (( r % 2 )); then tp_side; py_side; else py_side; tp_side; fi
done
print_rounds "torchperf top rung" "Python by hand" "${tp_runs[*]}" "${py_runs[*]}"
echo "  (the issue's target: the ladder's end at 0.95 or more of the hand-climbed loop)"
fi

if section 8; then
# Per model: the exhaustive sweep, then the smart search of the same space (same --time, no
# budget), then the two winners re-measured head to head (bench --vs: one process, or two when
# they differ in process state). The smart
# search should reach >= 98% of the exhaustive winner in <= 10% of its wall time.
search_time=${BENCH_SEARCH_TIME:-1}
search_models=${BENCH_SEARCH_MODELS:-"builtin:mlp builtin:encoder builtin:resnet18 $fixtures/mobilenet_v2_scripted.pt"}
echo "== 8. tune --search smart vs --search exhaustive (--time $search_time, no budget, ${BENCH_SEARCH_SPACE:-small} space), winners head to head"
printf '  %-26s %7s %9s %9s %-24s %9s %s\n' model points exh_s smart_s "smart/exhaustive (CI)" time% "points measured (exhaustive | smart)"
for m in $search_models; do
  name=$(basename "$m" .pt); name=${name#builtin:}
  input=(--input 3x224x224)
  case "$m" in builtin:*) input=();; esac
  space="runtime=cpp;batch=1,8,32;mode=eval;threads=1,$(nproc);grad=on,no_grad,inference;precision=fp32,bf16-autocast;graph=eager,frozen-opt"
  [ "$name" = mlp ] || [ "$name" = encoder ] || space="$space;format=contiguous,channels_last"
  space_arg=(--space "$space")
  # BENCH_SEARCH_SPACE=default: tune's own default space for the model instead (432 points for
  # ResNet-18: mode=train, pure bf16 and graph=frozen too), the space a user gets.
  [ "${BENCH_SEARCH_SPACE:-small}" = default ] && space_arg=()
  for kind in exhaustive smart; do
    out="$build/bench-search-$name-$kind"
    rm -rf "$out"
    start=$(date +%s)
    "$tp" tune "$m" "${input[@]}" "${space_arg[@]}" --time "$search_time" --budget 0 --search "$kind" \
      --out "$out" --quiet --json > "$out.json" 2> "$out.log" || true
    echo $(( $(date +%s) - start )) > "$out.wall"
  done
  "$python" - "$build/bench-search-$name" "$tp_binary" "$m" "${input[*]}" <<'PY'
import json, subprocess, sys
base, tp, model, inp = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
r = {k: json.load(open(f"{base}-{k}.json")) for k in ("exhaustive", "smart")}
wall = {k: float(open(f"{base}-{k}.wall").read()) for k in r}
win = {k: r[k]["winner"] for k in r}
name = base.rsplit("bench-search-", 1)[1]
if not all(win.values()):
    print(f"  {name}: a search named no winner (see {base}-*.log)")
    sys.exit(0)
# The smart winner (A) against the exhaustive one (B), each in its own worker.
cmp = json.loads(subprocess.run([tp, "bench", model, *inp, "--config", win["smart"], "--vs", win["exhaustive"],
                                 "--time", "10", "--quiet", "--json"], capture_output=True, text=True).stdout)
s = cmp["comparison"]["speedup"]
lo, hi = s["ci"]
ratio = f"{s['ratio']:.3f} ({lo:.3f}-{hi:.3f})" if lo is not None else f"{s['ratio']:.3f} (no CI)"
# What the points themselves took (every point record in the journal, brief and full); the rest
# of the wall time is what both searches pay: the fp32 references and the head-to-head comparisons.
def point_s(k):
    recs = [json.loads(l) for l in open(f"{base}-{k}/results.jsonl")]
    return sum(x.get("wall_s", 0) for x in recs if x.get("record") == "point")
pts = {k: point_s(k) for k in r}
def measured(k):
    sp = r[k]["search"]
    return f"{len(r[k]['points'])} ({sp['spent']})" if k == "smart" else str(len(r[k]["points"]))
print(f"  {name:26s} {r['exhaustive']['space']['points']:7d} {wall['exhaustive']:9.0f} {wall['smart']:9.0f} "
      f"{ratio:24s} {100 * wall['smart'] / wall['exhaustive']:8.1f}% {measured('exhaustive')} | {measured('smart')}")
print(f"  {'':26s} point time: exhaustive {pts['exhaustive']:.0f} s, smart {pts['smart']:.0f} s "
      f"({100 * pts['smart'] / max(pts['exhaustive'], 1e-9):.1f}%); the rest (references, head to head): "
      f"{wall['exhaustive'] - pts['exhaustive']:.0f} s and {wall['smart'] - pts['smart']:.0f} s")
print(f"  {'':26s} exhaustive: {win['exhaustive']}")
print(f"  {'':26s} smart:      {win['smart']}"
      f"{'  (the same)' if win['smart'] == win['exhaustive'] else ''}")
PY
done
fi

if section 9; then
# Both sides quantize the same file at start-up (Linear weights per channel, int8; activations per
# batch) and freeze it; inference mode; threads set once; the engine LibTorch starts with.
cores=$(nproc)
"$tp" export builtin:mlp "$fixtures/mlp.pt" > /dev/null
"$tp" export builtin:encoder "$fixtures/encoder.pt" > /dev/null
"$python" - "$fixtures" <<'PY'
import sys, torch
out = sys.argv[1]
torch.manual_seed(0)
torch.save(torch.randn(16, 784), f"{out}/inputs_mlp16.pt")
torch.save((torch.randint(0, 1000, (16, 32)), torch.ones(16, 32, dtype=torch.int64)),
           f"{out}/inputs_encoder16.pt")
# The 1000-wide MLP of int8's target: three Linear 1000x1000 with ReLU, in torch.nn.
mlp1000 = torch.nn.Sequential(torch.nn.Linear(1000, 1000), torch.nn.ReLU(),
                              torch.nn.Linear(1000, 1000), torch.nn.ReLU(),
                              torch.nn.Linear(1000, 1000)).eval()
torch.jit.script(mlp1000).save(f"{out}/mlp1000.pt")
torch.save(torch.randn(16, 1000), f"{out}/inputs_mlp100016.pt")
PY
for t in 1 "$cores"; do
  echo "== 9. int8 dynamic vs fp32, both torchperf: mlp1000 (3 Linear 1000x1000), batch 16, $t thread(s),"
  echo "      grad=inference, frozen, bench --vs --time $((seconds * 2)), the default guard (cosine>=0.999, top1>=99%)"
  out=$("$tp" bench "$fixtures/mlp1000.pt" --inputs-file "$fixtures/inputs_mlp100016.pt" --threads "$t" \
      --mode eval --grad inference --graph frozen --precision int8-dynamic \
      --vs "threads=$t,mode=eval,grad=inference,graph=frozen" --time "$((seconds * 2))" --quiet --json)
  "$python" - "$out" <<'PY'
import json, sys
c = json.loads(sys.argv[1])["comparison"]
s, q = c["speedup"], c["a"]["quality"]
lo, hi = s["ci"]
print(f"  int8 / fp32 = {s['ratio']:.3f} ({lo:.3f}-{hi:.3f}) {c['verdict']}; int8 output: cosine "
      f"{q['cosine']:.6f}, top1 {q['top1_agreement'] * 100:.1f}%, guard "
      f"{'passed' if c['a']['valid'] and q['cosine'] >= 0.999 and q['top1_agreement'] >= 0.99 else 'FAILED'}; "
      f"target >= 1.5x: {'met' if s['ratio'] >= 1.5 else 'NOT met'}")
PY
done
for name in mlp1000 mlp encoder; do
  for t in 1 "$cores"; do
    echo "== 9. int8 dynamic: torchperf vs PyTorch's quantize_dynamic_jit: $name, batch 16, $t thread(s),"
    echo "      grad=inference, frozen, alternated over $rounds rounds"
    tp_runs=(); py_runs=()
    for r in $(seq "$rounds"); do
      tp_runs+=("$("$tp" bench "$fixtures/$name.pt" --inputs-file "$fixtures/inputs_${name}16.pt" \
          --threads "$t" --mode eval --grad inference --precision int8-dynamic --graph frozen \
          --time "$seconds" --quiet --json \
          | "$python" -c 'import json,sys; print(json.load(sys.stdin)["measurement"]["throughput_samples_per_s"])')")
      py_runs+=("$("$python" "$here/compare_python.py" "$fixtures/$name.pt" "$fixtures/inputs_${name}16.pt" \
          "$t" "$seconds" inference frozen int8-dynamic 2>/dev/null \
          | "$python" -c 'import json,sys; print(json.load(sys.stdin)["samples_per_s"])')")
    done
    print_rounds "torchperf int8" "quantize_dynamic_jit" "${tp_runs[*]}" "${py_runs[*]}" 0.05
  done
done
fi

if section 10; then
# Serving: serve-tune's winner (the highest Poisson rate whose p99 meets the objective, over
# instances x threads, max_batch 1-8, a fresh server per candidate) against (a) bench's offline
# throughput of the same settings (instances x one instance's samples/s at the winner's threads
# and max_batch: perfect scaling assumed, so the ratio errs low) and (b) one request per forward
# (max_batch 1, one instance with every core), measured in the same search.
# Objectives: ResNet-18 p99=500ms (about 3x one batch-8 call of the tuned model here: waiting for
# a batch, the call, and a queue); the encoder p99=50ms (its calls take ~1 ms; HTTP dominates).
serve_budget=${BENCH_SERVE_BUDGET:-180s}
for spec in "builtin:resnet18|mode=eval,grad=inference,precision=bf16,format=channels_last,graph=frozen|p99=500ms" \
            "builtin:encoder|mode=eval,grad=inference|p99=50ms"; do
  IFS='|' read -r m config slo <<< "$spec"
  echo "== 10. serving $m ($config), objective $slo, serve-tune --budget $serve_budget"
  out="$build/bench-serve-$(basename "$m" | tr ':' '-')"
  "$tp" serve-tune "$m" --config "$config" --slo "$slo" --budget "$serve_budget" \
      --max-batches 1,2,4,8 --delays 2ms --out "$out" --quiet > /dev/null || true
  read -r k t b <<< "$("$python" -c '
import json, sys
j = json.load(open(sys.argv[1]))
w = [c for c in j["candidates"] if c["winner"]]
print(*(w[0]["instances"], w[0]["threads"], w[0]["max_batch"]) if w else (0, 0, 0))' "$out/serve-tune.json")"
  offline=0
  if [ "$k" != 0 ]; then
    offline=$("$tp" bench "$m" --config "$config" --batch "$b" --threads "$t" --time "$seconds" \
        --quiet --json | "$python" -c 'import json,sys; print(json.load(sys.stdin)["measurement"]["throughput_samples_per_s"])')
  fi
  "$python" - "$out/serve-tune.json" "$offline" "$k" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); offline = float(sys.argv[2]) * int(sys.argv[3])
def p99(c):
    best = [t for t in c["trials"] if t["valid"] and t["rate_per_s"] == c["best_rate"]]
    return best[0]["summary"]["latency_s"]["p99"]["value"] * 1e3 if best else float("nan")
measured = [c for c in j["candidates"] if c["measured"]]
for c in measured:
    tag = " WINNER" if c["winner"] else (" one request per forward" if c["unbatched"] else "")
    print(f"  instances={c['instances']} threads={c['threads']} max_batch={c['max_batch']:<2d}: "
          f"{c['best_rate']:7.1f} requests/s within the objective (p99 {p99(c):.1f} ms){tag}")
print(f"  ({len(measured)} of {len(j['candidates'])} candidates measured in {j['elapsed_s']:.0f} s)")
w = [c for c in j["candidates"] if c["winner"]]
u = [c for c in j["candidates"] if c["unbatched"] and c["best_rate"] > 0]
if not w:
    print("  no candidate met the objective")
else:
    w = w[0]
    print(f"  offline bench, {w['instances']} x (threads {w['threads']}, batch {w['max_batch']}): {offline:.1f} samples/s")
    print(f"  served winner / offline same settings    = {w['best_rate'] / offline:.3f}  (target >= 0.85)")
    if u:
        print(f"  served winner / one request per forward = {w['best_rate'] / u[0]['best_rate']:.3f}  (target >= 3)")
PY
done
fi

if section 11; then
  big="$build/bench/trace-1g.json"
  mkdir -p "$build/bench"
  [ -f "$big" ] || "$python" "$root/scripts/make_big_trace.py" \
      "$root/tests/data/traces/diff-control-a100.json.gz" "$big" 1000 > /dev/null
  [ -f "$big.gz" ] || gzip -1 -c "$big" > "$big.gz"
  echo "== 11. trace: $(du -m "$big" | cut -f1) MB of JSON ($(du -m "$big.gz" | cut -f1) MB gzip), torchperf trace vs Python's json.load"
  timing=$(mktemp)
  for f in "$big" "$big.gz"; do
    tp_runs="" py_runs=""
    for round in 1 2; do
      /usr/bin/time -f "%e %M" -o "$timing" "$tp_binary" trace "$f" --json > /dev/null
      tp_runs="$tp_runs $(tr '\n' ' ' < "$timing")"
      /usr/bin/time -f "%e %M" -o "$timing" "$python" -c '
import gzip, json, sys
path = sys.argv[1]
with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
    trace = json.load(f)
print(len(trace["traceEvents"]))' "$f" > /dev/null
      py_runs="$py_runs $(tr '\n' ' ' < "$timing")"
    done
    "$python" - "$f" "$tp_runs" "$py_runs" <<'PY'
import os, sys
path, tp, py = sys.argv[1], [float(v) for v in sys.argv[2].split()], [float(v) for v in sys.argv[3].split()]
size = os.path.getsize(path) / 1e6
tp_s, tp_kb = tp[0::2], tp[1::2]
py_s, py_kb = py[0::2], py[1::2]
print(f"  {os.path.basename(path)} ({size:.0f} MB on disk)")
print(f"    torchperf trace (whole analysis): {min(tp_s):6.2f} s (runs {', '.join(f'{s:.2f}' for s in tp_s)}), peak {max(tp_kb) / 1024:7.0f} MB")
print(f"    python json.load (parse only)   : {min(py_s):6.2f} s (runs {', '.join(f'{s:.2f}' for s in py_s)}), peak {max(py_kb) / 1024:7.0f} MB")
print(f"    time ratio python / torchperf = {min(py_s) / min(tp_s):.1f}x; memory ratio = {max(py_kb) / max(tp_kb):.1f}x")
if not path.endswith(".gz"):
    print(f"    target: torchperf <= 5 s: {'met' if min(tp_s) <= 5 else 'NOT met'}; "
          f"peak memory <= the file's size: {'met' if max(tp_kb) * 1024 <= size * 1e6 else 'NOT met'}")
PY
  done
  # Holistic Trace Analysis itself on the plain file, once (it takes minutes): its time and
  # memory, and its temporal breakdown against torchperf's device summary of the same steps.
  # HTA reads every *.json of the folder it is given: the trace's link alone is in traces/.
  hta_dir=$(mktemp -d)
  mkdir "$hta_dir/traces"
  ln -s "$(cd "$(dirname "$big")" && pwd)/$(basename "$big")" "$hta_dir/traces/"
  /usr/bin/time -f "%e %M" -o "$timing" "$python" - "$hta_dir/traces" > "$hta_dir/hta.json" <<'PY'
import json, logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
t = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=True).get_temporal_breakdown(visualize=False).iloc[0]
print(json.dumps({k: float(t[k]) for k in ("idle_time(us)", "compute_time(us)", "non_compute_time(us)", "kernel_time(us)")}))
PY
  "$tp_binary" trace "$big" --json > "$hta_dir/tp.json"
  "$python" - "$hta_dir" "$(cat "$timing")" <<'PY'
import json, sys
folder, (seconds, kb) = sys.argv[1], sys.argv[2].split()
hta = json.load(open(folder + "/hta.json"))
d = json.load(open(folder + "/tp.json"))["traces"][0]["device"]
ours = {"idle_time(us)": d["temporal_ms"]["idle"], "compute_time(us)": d["temporal_ms"]["compute"],
        "non_compute_time(us)": d["temporal_ms"]["non_compute"], "kernel_time(us)": d["span_ms"]}
print(f"  Holistic Trace Analysis (TraceAnalysis and its temporal breakdown) on the plain file: {float(seconds):.1f} s, peak {int(kb) / 1024:.0f} MB")
worst = max(abs(ours[k] * 1e3 / hta[k] - 1) for k in hta if hta[k])
print(f"    its temporal breakdown vs torchperf's: idle, compute, non-compute, span agree within {100 * worst:.3f}% (target 1%)")
PY
  rm -rf "$hta_dir"
  rm -f "$timing"
fi

if section 12; then
# Which process-level settings change this LibTorch's speed on this CPU: each value of a worker
# knob against the default, in two worker processes (they differ in process state), interleaved
# by bench --vs (the idle one stopped), at 1 thread and every usable core. A process's own speed
# varies (glibc's heap history alone swings ResNet-18 by up to 30% from one process to the next),
# so each setting is measured in $repeats independent pairs of processes, and the allocator is
# pinned to glibc-tuned on both sides except where it is the setting measured.
cores=$(nproc)
repeats=${BENCH_SETTINGS_REPEATS:-2}
settings=${BENCH_SETTINGS:-"aten_isa=avx2 aten_isa=none onednn_isa=avx2 mkl_isa=avx2 mkl_isa=avx512 allocator=glibc-tuned allocator=jemalloc allocator=tcmalloc allocator=mimalloc omp_wait=active omp_wait=passive omp_bind=close omp_bind=spread"}
echo "== 12. process-level settings vs the default, bench --vs in two processes, --time $seconds, $repeats pairs each"
echo "      ($("$tp" env --json | "$python" -c 'import json,sys; e=json.load(sys.stdin); print("torch", e["torch_version"] + ",", e["torch_build"]["summary"] + ";", e["cpu_model"])'))"
for m in ${BENCH_SETTINGS_MODELS:-builtin:mlp builtin:resnet18 builtin:encoder}; do
  for t in 1 "$cores"; do
    for kv in $settings; do
      pin=",allocator=glibc-tuned"; [[ "$kv" == allocator=* ]] && pin=""
      outs=()
      for r in $(seq "$repeats"); do
        outs+=("$(env -u MALLOC_MMAP_THRESHOLD_ -u MALLOC_TRIM_THRESHOLD_ -u MALLOC_MMAP_MAX_ "$tp_binary" bench "$m" \
                  --threads "$t" --config "$kv$pin" --vs "threads=$t$pin" --time "$seconds" \
                  --quiet --json 2>&1 || true)")
      done
      "$python" - "$m" "$t" "$kv" "${outs[@]}" <<'PY'
import json, sys
model, threads, setting, texts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
cells, verdicts = [], []
for text in texts:
    try:
        c = json.loads(text)["comparison"]
        s = c["speedup"]
        lo, hi = s["ci"] if s["ci"] and s["ci"][0] is not None else (float("nan"), float("nan"))
        cells.append(f"{s['ratio']:.3f} ({lo:.3f}-{hi:.3f})")
        verdicts.append(c["verdict"])
    except Exception:
        cells.append("not measured: " + (text.strip().splitlines()[-1] if text.strip() else "?"))
        verdicts.append("?")
# A setting changes something when every pair sees it, the same way.
same = len(set(verdicts)) == 1 and verdicts[0] in ("faster", "slower")
print(f"  {model:17} {threads} thr  {setting:22} " + "  ".join(cells) +
      f"  -> {verdicts[0] if same else 'no consistent effect'}")
PY
    done
  done
done
fi

if section 13; then
# The watchdog reads /proc/self/status every 20 ms from a thread of its own while the timed
# blocks run: what that costs, as two bench processes alternated A B A B (equal settings, the
# allocator pinned as in section 2). It should be within the noise: 0.98-1.02.
for m in builtin:mlp builtin:resnet18; do
  for t in 1 "$(nproc)"; do
    echo "== 13. the memory watchdog: bench $m --batch 8 --threads $t, default cap vs --memory-cap none, $rounds rounds"
    capped=(); uncapped=()
    for r in $(seq "$rounds"); do
      for cap in default none; do
        flag=(); [ "$cap" = none ] && flag=(--memory-cap none)
        v=$("$tp" bench "$m" --batch 8 --threads "$t" --grad inference --time "$seconds" "${flag[@]}" \
            --quiet --json | "$python" -c 'import json,sys; print(json.load(sys.stdin)["measurement"]["throughput_samples_per_s"])')
        if [ "$cap" = none ]; then uncapped+=("$v"); else capped+=("$v"); fi
      done
    done
    print_rounds "watchdog on" "watchdog off" "${capped[*]}" "${uncapped[*]}" 0.02
  done
done
fi

if section 14; then
# AOTInductor (torch.export programs, issue 30). Compiles go to a cache of this run's own, so
# each compile time printed is one that was paid here.
export TORCHPERF_CACHE_DIR="$build/bench-aoti-cache"
rm -rf "$TORCHPERF_CACHE_DIR"
aoti_threads=${BENCH_AOTI_THREADS:-2}
value() { "$python" -c 'import json,sys; m=json.load(sys.stdin)["measurement"]; print(m[sys.argv[1]] if sys.argv[1] != "package" else m["compile"]["package"])' "$1"; }
# 14a. The same package from C++ (torchperf bench --graph aoti) and from Python
# (torch._inductor.aoti_load_package, torch.utils.benchmark): within 10%, alternated A B A B.
echo "== 14a. ResNet-18 (resnet18_dynamic.pt2), batch 16, $aoti_threads threads: torchperf bench --graph aoti"
echo "      vs the same package from Python (aoti_load_package), alternated over $rounds rounds"
first=$("$tp" bench "$fixtures/resnet18_dynamic.pt2" --graph aoti --batch 16 --threads "$aoti_threads" \
        --time "$seconds" --quiet --json)
package=$(echo "$first" | value package)
echo "  compiled once: $(echo "$first" | "$python" -c 'import json,sys; c=json.load(sys.stdin)["measurement"]["compile"]; print("{:.1f} s, cache hit {}".format(c["compile_s"], c["cache_hit"]))')"
tp_runs=(); py_runs=()
for r in $(seq "$rounds"); do
  tp_runs+=("$("$tp" bench "$fixtures/resnet18_dynamic.pt2" --graph aoti --batch 16 --threads "$aoti_threads" \
      --time "$seconds" --quiet --json | value throughput_samples_per_s)")
  py_runs+=("$("$python" "$here/compare_aoti_python.py" "$package" 16 3x224x224 "$aoti_threads" "$seconds" 2>/dev/null \
      | "$python" -c 'import json,sys; print(json.load(sys.stdin)["samples_per_s"])')")
done
print_rounds "torchperf (C++)" "Python aoti_load_package" "${tp_runs[*]}" "${py_runs[*]}" 0.10

# 14b. The best AOTInductor point against the best TorchScript point of each convolutional
# fixture, batch 16, every usable core: each candidate measured once, then the two bests
# alternated over the rounds (target: AOTI >= 1.10x). Each AOTI candidate's compile time is
# printed beside its run time.
cores=$(nproc)
for name in resnet18 mobilenet_v2; do
  echo "== 14b. $name, batch 16, $cores threads: best AOTInductor point vs best TorchScript point"
  best_aoti=""; best_aoti_v=0; best_ts=""; best_ts_v=0
  for cfg in "graph=aoti,precision=fp32" "graph=aoti,precision=bf16" "graph=aoti-max-autotune,precision=fp32"; do
    out=$("$tp" bench "$fixtures/${name}_dynamic.pt2" --config "$cfg,batch=16,threads=$cores" --time "$seconds" --quiet --json)
    v=$(echo "$out" | value throughput_samples_per_s)
    echo "$out" | "$python" -c 'import json,sys; m=json.load(sys.stdin)["measurement"]; c=m["compile"]; print("  AOTI  {:40} {:8.2f} samples/s  cos {:.6f}  compile {:.1f} s (paid now: {})".format(sys.argv[1], m["throughput_samples_per_s"], m["quality"]["cosine"], c["compile_s"], not c["cache_hit"]))' "$cfg"
    if "$python" -c "import sys; sys.exit(0 if float('$v') > float('$best_aoti_v') else 1)"; then best_aoti=$cfg; best_aoti_v=$v; fi
  done
  for cfg in "graph=eager,precision=fp32" "graph=frozen-opt,precision=fp32" "graph=frozen-opt,precision=bf16-autocast"; do
    out=$("$tp" bench "$fixtures/${name}_scripted.pt" --input 3x224x224 --config "$cfg,batch=16,threads=$cores,mode=eval,grad=inference" \
        --time "$seconds" --quiet --json)
    v=$(echo "$out" | value throughput_samples_per_s)
    # TorchScript's one-time cost is its load and graph passes (freezing): setup, beside AOTI's compile.
    echo "$out" | "$python" -c 'import json,sys; m=json.load(sys.stdin)["measurement"]; print("  TS    {:40} {:8.2f} samples/s  cos {:.6f}  setup {:.1f} s".format(sys.argv[1], m["throughput_samples_per_s"], m["quality"]["cosine"], m["setup_ms"] / 1e3))' "$cfg"
    if "$python" -c "import sys; sys.exit(0 if float('$v') > float('$best_ts_v') else 1)"; then best_ts=$cfg; best_ts_v=$v; fi
  done
  a_runs=(); b_runs=()
  for r in $(seq "$rounds"); do
    a_runs+=("$("$tp" bench "$fixtures/${name}_dynamic.pt2" --config "$best_aoti,batch=16,threads=$cores" --time "$seconds" --quiet --json | value throughput_samples_per_s)")
    b_runs+=("$("$tp" bench "$fixtures/${name}_scripted.pt" --input 3x224x224 --config "$best_ts,batch=16,threads=$cores,mode=eval,grad=inference" --time "$seconds" --quiet --json | value throughput_samples_per_s)")
  done
  print_rounds "AOTI $best_aoti" "TS $best_ts" "${a_runs[*]}" "${b_runs[*]}"
done
fi

if section 15; then
# The python runtime (issue 31): torchperf's Python worker, driven block by block by its C++
# sampler, against a plain script timing the same program with torch.utils.benchmark. Both run
# under inference_mode at batch 8; torch.compile's first call (the compile) is outside both timings.
# The MLP's call takes tens of microseconds (issue 51): there a timing loop's own cost shows.
py_batch=${BENCH_PY_BATCH:-8}
for entry in "ResNet-18|resnet18_dynamic.pt2|3x224x224" "MLP|mlp_dynamic.pt2|32"; do
  IFS='|' read -r label file shape <<< "$entry"
  [ -n "${BENCH_PY_MODELS:-}" ] && [[ " $BENCH_PY_MODELS " != *" $label "* ]] && continue
  for graph in eager compile; do
    tolerance=0.05; [ "$graph" = compile ] && tolerance=0.07
    for t in ${BENCH_PY_THREADS:-1 $(nproc)}; do
      echo "== 15. $label ($file), batch $py_batch, $t thread(s), graph=$graph:"
      echo "      torchperf bench --runtime python vs torch.utils.benchmark, alternated over $rounds rounds"
      tp_runs=(); py_runs=()
      for r in $(seq "$rounds"); do
        tp_runs+=("$("$tp" bench "$fixtures/$file" --runtime python --graph "$graph" \
            --grad inference --batch "$py_batch" --threads "$t" --time "$seconds" --quiet --json \
            | "$python" -c 'import json,sys; print(json.load(sys.stdin)["measurement"]["throughput_samples_per_s"])')")
        py_runs+=("$("$python" "$here/compare_python_runtime.py" "$fixtures/$file" "$py_batch" \
            "$shape" "$t" "$seconds" "$graph" 2>/dev/null \
            | "$python" -c 'import json,sys; print(json.load(sys.stdin)["samples_per_s"])')")
      done
      print_rounds "torchperf --runtime python" "torch.utils.benchmark" "${tp_runs[*]}" "${py_runs[*]}" "$tolerance"
    done
  done
done
fi

if section 16; then
# The Python API (issue 32): the five lines a user writes, then the callable apply returns timed
# by torch.utils.benchmark in the same process, at the winner's batch, against tune's figure.
for m in mlp resnet18; do
  echo "== 16. torchperf.tune + apply on $m (budget ${BENCH_API_BUDGET:-5m}), $rounds rounds of torch.utils.benchmark:"
  api_out="$build/bench-api-$m"
  rm -rf "$api_out"
  TORCHPERF_CLI="$tp_binary" PYTHONPATH="$root/python" "$python" "$here/python_api_apply.py" "$m" \
      "${BENCH_API_BUDGET:-5m}" "$rounds" "$seconds" "$api_out" 2>/dev/null
done
fi

if section 17; then
# Issue 43. Each fixture's tune starts from an empty cache of its own, so every compile it needs
# is paid inside its budget; the hand-tuned settings each run in a process of their own.
tune_budget=${BENCH_TUNE_BUDGET:-5m}
tune_rounds=${BENCH_TUNE_ROUNDS:-2}
encoder_dir="$build/bench-encoder"
encoder_spec='int64:32@0..1000;int64:32@1..2'
[ -f "$encoder_dir/model.pt2" ] || PYTHONPATH="$root/python" "$python" -m torchperf.builtin_models \
    encoder "$encoder_dir" --inputs "$encoder_spec" > /dev/null
for entry in "resnet18|$fixtures/resnet18_dynamic.pt2|$fixtures/resnet18_scripted.pt|3x224x224" \
             "mobilenet_v2|$fixtures/mobilenet_v2_dynamic.pt2|$fixtures/mobilenet_v2_scripted.pt|3x224x224" \
             "encoder|$encoder_dir/model.pt2|$encoder_dir/model.pt|$encoder_spec"; do
  IFS='|' read -r name program script spec <<< "$entry"
  [ -n "${BENCH_TUNE_MODELS:-}" ] && [[ " $BENCH_TUNE_MODELS " != *" $name "* ]] && continue
  inputs=(); IFS=';' read -ra parts <<< "$spec"; for part in "${parts[@]}"; do inputs+=(--input "$part"); done
  echo "== 17. $name as a program, batch 16: tune --budget $tune_budget (empty cache) vs the best by hand"
  export TORCHPERF_CACHE_DIR="$build/bench-tune-cache-$name"
  rm -rf "$TORCHPERF_CACHE_DIR" "$build/bench-tune-$name" "$build/bench-tune-$name-again"
  started=$(date +%s.%N)
  "$tp" tune "$program" "${inputs[@]}" --batch 16 --budget "$tune_budget" --out "$build/bench-tune-$name" \
      --json > "$build/bench-tune-$name.json" 2> "$build/bench-tune-$name.err"
  tune_s=$("$python" -c "import time; print(f'{time.time() - $started:.0f}')")
  winner=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["winner"] or "")' "$build/bench-tune-$name.json")
  [ -n "$winner" ] || { echo "  tune named no winner: see $build/bench-tune-$name.err"; continue; }
  "$python" - "$build/bench-tune-$name.json" "$tune_s" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"  tune: {sys.argv[2]} s, {r['search']['brief_points']} brief + {r['search']['full_points']} full points "
      f"({r['search']['spent']}), winner {r['winner']}")
for p in r["packages"]:
    print(f"    AOTInductor package {p['options']}: compile {p['compile_s']:.1f} s{' (cache)' if p['cache_hit'] else ''}"
          f"{' FAILED ' + p['failure'][:80] if p['failure'] else ''}")
PY
  "$python" "$here/hand_tuned_program.py" "$program" "$script" "$spec" 16 "$seconds" > "$build/bench-hand-$name.json"
  "$python" - "$build/bench-hand-$name.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for s in r["settings"]:
    if "samples_per_s" in s:
        print(f"    by hand {s['setting']:40} {s['samples_per_s']:9.1f} samples/s  first call {s['first_call_s']:.1f} s")
    else:
        print(f"    by hand {s['setting']:40} failed: {s['failed']}")
PY
  best=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["best"]["setting"])' "$build/bench-hand-$name.json")
  tp_runs=(); py_runs=()
  for r in $(seq "$tune_rounds"); do
    tp_runs+=("$("$tp" bench "$program" "${inputs[@]}" --config "$winner" --time "$seconds" --quiet --json \
        | "$python" -c 'import json,sys; print(json.load(sys.stdin)["measurement"]["throughput_samples_per_s"])')")
    py_runs+=("$("$python" "$here/hand_tuned_program.py" "$program" "$script" "$spec" 16 "$seconds" "$best" \
        | "$python" -c 'import json,sys; print(json.load(sys.stdin)["samples_per_s"])')")
  done
  print_rounds "tune's winner" "best by hand ($best)" "${tp_runs[*]}" "${py_runs[*]}"
  if [ "$name" = resnet18 ]; then
    started=$(date +%s.%N)
    "$tp" tune "$program" "${inputs[@]}" --batch 16 --budget "$tune_budget" --out "$build/bench-tune-$name-again" \
        --json > "$build/bench-tune-$name-again.json" 2> "$build/bench-tune-$name-again.err"
    again_s=$("$python" -c "import time; print(f'{time.time() - $started:.0f}')")
    echo "  the same tune again on the same cache: $again_s s (first: $tune_s s); its plan says:"
    grep -o 'AOTInductor packages:[^;]*\|torch.compile: [^;]*' "$build/bench-tune-$name-again.err" | sed 's/^/    /' || true
    "$python" - "$build/bench-tune-$name" "$build/bench-tune-$name-again" <<'PY'
import json, sys
# What each run paid for compiles (packages compiled, torch.compile's first calls) and what the
# budget bought instead: points measured.
for label, folder in (("first", sys.argv[1]), ("again", sys.argv[2])):
    paid, points = 0.0, 0
    for line in open(folder + "/results.jsonl"):
        r = json.loads(line)
        if r.get("record") == "package" and not r["cache_hit"]:
            paid += r["compile_s"]
        if r.get("record") == "point":
            points += 1
            c = (r.get("measurement") or {}).get("compile")
            if c and "runtime=python" in r["configuration"] and not c.get("cache_hit"):
                paid += c["compile_s"]
    print(f"    {label}: {paid:.0f} s of compiles paid, {points} points measured")
PY
  fi
done
unset TORCHPERF_CACHE_DIR
fi

if section 18; then
# Issue 43. The exhaustive journals are kept (BENCH_REPLAY_FRESH=1 sweeps again): a replay reads
# each point's score and wall time from them, so the engines meet the same space, the same
# measurements and the same budget, over many seeds, in seconds.
"$python" -c 'import optuna' 2> /dev/null || "$python" -m pip install -q -r "$here/requirements.txt"
replay_summary=$(cat <<'PY'
import json, statistics, sys
for line in sys.stdin:
    r = json.loads(line)
    ratios = sorted(x["ratio"] for x in r["runs"])
    spent = statistics.mean(x["spent_fraction"] for x in r["runs"])
    good = sum(x >= 0.98 for x in ratios)
    print(f"  {r['engine']:12s} {r['points']} points, sweep {r['sweep_s']:.0f} s: winner/exhaustive "
          f"median {statistics.median(ratios):.3f}, worst {ratios[0]:.3f}, >= 0.98 in {good}/{len(ratios)} "
          f"seeds; time spent {100 * spent:.1f}% of the sweep")
PY
)
replay_fraction=${BENCH_REPLAY_FRACTION:-0.10}
replay_seeds=${BENCH_REPLAY_SEEDS:-20}
encoder_dir="$build/bench-encoder"
[ -f "$encoder_dir/model.pt2" ] || PYTHONPATH="$root/python" "$python" -m torchperf.builtin_models \
    encoder "$encoder_dir" --inputs 'int64:32@0..1000;int64:32@1..2' > /dev/null
for entry in "resnet18-torchscript|$fixtures/resnet18_scripted.pt|--input 3x224x224" \
             "encoder-program|$encoder_dir/model.pt2|--input int64:32@0..1000 --input int64:32@1..2 --batch 16"; do
  IFS='|' read -r name model args <<< "$entry"
  out="$build/bench-replay-$name"
  if [ -n "${BENCH_REPLAY_FRESH:-}" ] || [ ! -f "$out/results.jsonl" ] || ! grep -q '"record":"summary"' "$out/results.jsonl"; then
    rm -rf "$out"
    # shellcheck disable=SC2086
    "$tp" tune "$model" $args --search exhaustive --time "${BENCH_REPLAY_TIME:-1}" --budget 0 --out "$out" --quiet --json \
        > "$out.json" 2> "$out.log" || true
  fi
  echo "== 18. $name: ridge (tune's smart search) vs Optuna, replayed on the exhaustive sweep, $replay_seeds seeds, budget ${replay_fraction} of its time"
  "$build/bench/torchperf_search_replay" "$out/results.jsonl" --table "$out.table.json"
  { "$build/bench/torchperf_search_replay" "$out/results.jsonl" "$replay_fraction" "$replay_seeds"
    "$python" "$here/optuna_replay.py" "$out.table.json" "$replay_fraction" "$replay_seeds" tpe
    # The GP sampler refits a Gaussian process per trial: minutes a seed on 2 cores, so fewer.
    "$python" "$here/optuna_replay.py" "$out.table.json" "$replay_fraction" "${BENCH_REPLAY_GP_SEEDS:-5}" gp
  } | "$python" -c "$replay_summary"
done
fi

if section 19; then
# Issue 44. A one-node Ray cluster on loopback (one node: no point shares the machine with
# another), the same exhaustive tune here and on it, alternated: each point's wall through Ray
# less the same point's here.
echo "== 19. a point through Ray against the same point here (built-in MLP, 4 points, ${BENCH_CLUSTER_ROUNDS:-3} rounds)"
"$python" "$here/cluster_overhead.py" "$tp_binary" "${BENCH_CLUSTER_ROUNDS:-3}"
fi

if section 20; then
# Issue 51. Each model's tune, then its applied callable against the careful loop, alternated.
for m in readme-mlp encoder; do
  echo "== 20. torchperf.tune + apply on $m (budget ${BENCH_PROMISE_BUDGET:-3m}) in the caller's process, ${BENCH_PROMISE_ROUNDS:-9} rounds:"
  promise_out="$build/bench-promise-$m"
  rm -rf "$promise_out"
  TORCHPERF_CLI="$tp_binary" PYTHONPATH="$root/python" "$python" "$here/applied_promise.py" "$m" \
      "${BENCH_PROMISE_BUDGET:-3m}" "${BENCH_PROMISE_ROUNDS:-9}" "${BENCH_PROMISE_SECONDS:-0.3}" "$promise_out" 2>/dev/null
done
fi

if section 21; then
# Issue 52. Lengths that vary: tune's winner on a stream skewed short against padding to 512 and
# against a careful person's Python (sorting, buckets, torch.compile dynamic or static per bucket,
# bf16 autocast where the CPU has it), each side in its own process, alternated rounds.
echo "== 21. lengths that vary: the built-in encoder, batch 16, lognormal lengths (median 40, to 512); tune (${BENCH_SHAPES_BUDGET:-5m}) vs by hand, ${BENCH_SHAPES_ROUNDS:-3} rounds"
PYTHONPATH="$root/python" "$python" "$here/shapes_vs_hand.py" "$tp_binary" "${BENCH_SHAPES_BUDGET:-5m}" \
    "${BENCH_SHAPES_ROUNDS:-3}" "${BENCH_SHAPES_SECONDS:-3}" "$build/bench-shapes"
fi

if section 22; then
# Issue 53. DDP ranks under torch's launcher: the ladder's top rung against a DDP script tuned by
# hand, and the checkpointing rung under a memory cap against the largest batch that fits without.
"$python" "$here/ddp_vs_hand.py" "$tp_binary" "${BENCH_DDP_ROUNDS:-10}" "${BENCH_DDP_BUDGET:-3m}" \
    "$build/bench-ddp" "${BENCH_DDP_PARTS:-ab}"
fi

if section 23; then
# Issue 60. A point costs what its decision needs: tune over a real-size stream within 5 minutes.
echo "== 23. a tune within its budget: an encoder of our own over 2,048 lengths, batch 16, --budget ${BENCH_BUDGET_TUNE:-5m}; its winner vs sorted loops by hand, ${BENCH_BUDGET_ROUNDS:-2} rounds"
PYTHONPATH="$root/python" "$python" "$here/tune_in_budget.py" "$tp_binary" "${BENCH_BUDGET_TUNE:-5m}" \
    "${BENCH_BUDGET_ROUNDS:-2}" "$build/bench-budget"
fi

if section 24; then
# Issue 60. The figure tune states for a configuration is what torch.utils.benchmark measures of it.
echo "== 24. tune's stated figure vs torch.utils.benchmark in a fresh process: MobileNetV2 fixture, batch 16, each runtime and format"
"$python" "$here/stated_vs_tub.py" "$tp_binary" "$fixtures" "${BENCH_STATED_ROUNDS:-3}" \
    "${BENCH_STATED_SECONDS:-3}" "$build/bench-stated"
fi

if section 25; then
# Issue 61. The fastest way whichever engine it is: tune's winner against the engines and
# torch.compile by hand.
echo "== 25. engines in the tune: its winner (--budget ${BENCH_ENGINES_BUDGET:-5m}, batch 16) vs the best hand side, ${BENCH_ENGINES_ROUNDS:-2} rounds"
"$python" "$here/engines_vs_hand.py" "$tp_binary" "$fixtures" "${BENCH_ENGINES_BUDGET:-5m}" \
    "${BENCH_ENGINES_ROUNDS:-2}" "${BENCH_ENGINES_SECONDS:-3}" "$build/bench-engines"
fi

if section 26; then
# Issue 62. Serving text as it arrives: serve-tune's bucketed queue against per-length calls and a
# TEI-style token-budget queue, each in its own server, alternated at each rate.
echo "== 26. serving lengths that vary: the built-in encoder, lognormal lengths (median 40, to 512), serve-tune (--budget ${BENCH_SERVING_BUDGET:-4m}) vs per-length calls and a TEI-style queue, ${BENCH_SERVING_ROUNDS:-2} rounds"
"$python" "$here/serving_lengths.py" "$tp_binary" "${BENCH_SERVING_BUDGET:-4m}" \
    "${BENCH_SERVING_ROUNDS:-2}" "$build/bench-serving"
fi

if section 27; then
# Issue 84. What is served is what was measured: bench's figure of a configuration against the
# same configuration served, for a C++, a Python and an engine runtime.
echo "== 27. served vs measured: MobileNetV2, batch 8, one thread; bench vs serve + load (16 clients), ${BENCH_SERVED_ROUNDS:-2} rounds"
"$python" "$here/served_vs_tuned.py" "$tp_binary" "$fixtures" "${BENCH_SERVED_ROUNDS:-2}" \
    "${BENCH_SERVED_SECONDS:-15}" "$build/bench-served"
fi

if section 28; then
# Issue 85: text generation. optimum-intel (the hand set's OpenVINO side, and an engine of the
# tune's) is an extra, installed without its declared CUDA torch.
"$python" -c 'import optimum.intel' 2> /dev/null ||
  "$python" -m pip install -q --no-deps -r "$here/requirements-generation.txt"
"$python" "$here/generation_vs_hand.py" "$tp_binary" "$build/bench-decoders" "$build/bench-generation" \
    "${BENCH_GENERATION_BUDGET:-5m}" "${BENCH_GENERATION_ROUNDS:-2}" "${BENCH_GENERATION_CALLS:-5}" \
    "${BENCH_GENERATION_THREADS:-$(nproc)}"
fi

#!/bin/bash
# The GPU check, on a machine with an NVIDIA GPU and PyTorch in its python3 (no package registry
# needed): run from a copy of this repository with the bundle scripts/gpu_build.sh made.
#
#   scripts/gpu_check.sh BUNDLE OUT [TUNE_BUDGET]
#
# In one run: the environment; the CUDA-labelled tests (CUDA-graph capture and replay, the C++
# runtime library's bindings); the two commands that crashed on the first GPU (bench --vs in two
# workers, quiet, to a file; the Python runtime); the hand-tuned PyTorch peers (bench/gpu_peers.py);
# a tune of the built-in ResNet-18 at batch 64; and the table of tune's winner over each peer.
# Every step has its own time limit and writes its log under OUT, so a slow step costs itself.
# Under 9 minutes on an H100 with 16 cores (docs/gpu.md has the figures).
set -u
BUNDLE=$(cd "$1" && pwd)
OUT=$2
BUDGET=${3:-210s}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
started=$(date +%s)
step() { echo "=== [$(( $(date +%s) - started )) s] $*"; }

. scripts/gpu_env.sh

step "environment"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
timeout 60 "$TP" env 2>&1 | tee "$OUT/env.txt" | sed -n '1,12p'

# GPU_CHECK_TUNE_ONLY=1: the peers, the tune and the table only (a short re-check of the search).
if [ -z "${GPU_CHECK_TUNE_ONLY:-}" ]; then
step "the C++ runtime library first: std::filesystem binds to libstdc++, not to libtorch's copy"
readelf -d "$TP" | awk '/NEEDED/ {print "first NEEDED: " $5; exit}'
LD_BIND_NOW=1 LD_DEBUG=bindings "$TP" --version 2>&1 | grep -m1 'remove_all' |
  sed 's/^ *[0-9]*: *//' || echo "remove_all: not bound at start-up"

step "CUDA-labelled tests"
timeout 180 "$BUNDLE/tests/torchperf_runtime_tests" --gtest_filter='*Cuda*' 2>&1 |
  tee "$OUT/cuda-tests.txt" | grep -E '^\[ *(OK|FAILED|PASSED|SKIPPED) ' | sed -n '1,20p'

step "bench --vs in two workers, --quiet, to a file (crashed with SIGSEGV on the first GPU)"
timeout 150 "$TP" bench builtin:resnet18 --device cuda --batch 64 --precision fp16 \
  --format channels_last --cudnn-benchmark on --grad inference --mode eval --vs baseline --time 6 \
  --quiet > "$OUT/bench-vs.txt" 2> "$OUT/bench-vs.err"
echo "exit $?"; grep -m1 'A vs B' "$OUT/bench-vs.txt"; tail -2 "$OUT/bench-vs.err"

step "the Python runtime on CUDA (crashed with SIGSEGV on the first GPU), half weights, channels_last"
timeout 150 "$TP" bench builtin:resnet18 --device cuda --batch 64 --runtime python --graph eager \
  --precision fp16 --format channels_last --grad inference --time 3 --quiet \
  > "$OUT/bench-python.txt" 2> "$OUT/bench-python.err"
echo "exit $?"; grep -m1 'samples/s' "$OUT/bench-python.txt"; tail -2 "$OUT/bench-python.err"

fi

# GPU_CHECK_NO_PEERS=1: the crash regressions and the tune only (a check of torchperf's own code
# on CUDA when the device time left does not pay for the peers; no table then).
if [ -z "${GPU_CHECK_NO_PEERS:-}" ]; then
step "the hand-tuned PyTorch peers (torch.utils.benchmark, each in its own process)"
TORCHPERF_CLI="$TP" PYTHONPATH=python timeout 240 python3 bench/gpu_peers.py --model resnet18 --input 3x224x224 --batch 64 --seconds 3 \
  --json "$OUT/peers.json" 2>&1 | tee "$OUT/peers.txt"
fi

# The space: every runtime but AOTInductor (its first CUDA compile takes about two minutes, most
# of the check's budget), each with the settings the GPU guides name: C++ TorchScript with and
# without CUDA graphs, Python eager and torch.compile (default and reduce-overhead), fp32 and fp16
# weights, channels_last, inference mode, cuDNN's benchmark.
SPACE="runtime=cpp,python;graph=eager,frozen-opt,compile,compile-reduce-overhead;precision=fp32,fp16"
SPACE="$SPACE;format=contiguous,channels_last;grad=inference;cuda_graphs=off,on;cudnn_benchmark=on;tf32=default"
step "tune builtin:resnet18 --device cuda --batch 64 --budget $BUDGET ${GPU_TUNE_ARGS:+$GPU_TUNE_ARGS }--space '$SPACE'"
timeout 420 "$TP" tune builtin:resnet18 --device cuda --batch 64 --budget "$BUDGET" \
  ${GPU_TUNE_ARGS:-} --space "$SPACE" --out "$OUT/tune" --json > "$OUT/tune.json" 2> "$OUT/tune.err"
echo "exit $?"; grep -v '^\s*$' "$OUT/tune.err" | tail -15

if [ -z "${GPU_CHECK_NO_PEERS:-}" ]; then
step "tune's winner over each peer"
python3 bench/gpu_table.py "$OUT/tune.json" "$OUT/peers.json" | tee "$OUT/table.md"
else
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); w=r["winner"]
ps=[p for p in r["points"] if p["key"]==w and p.get("metrics")]
print("winner", w, ps[-1]["metrics"]["throughput_samples_per_s"] if ps else None, "samples/s;", r["search"]["spent"], "; plan:", r["plan"]["summary"][:300])' "$OUT/tune.json"
fi
step "done"

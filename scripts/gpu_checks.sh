#!/bin/bash
# Both GPU checks in one device session of at most 9 minutes (the device tool's 15 minutes include
# the machine's start): the inference check (gpu_check.sh) with a shorter tune, then the training
# check (gpu_train_check.sh) with a shorter ladder and 3 rounds. Each has its own time limit, so a
# slow first check leaves the second its share. GPU_INFERENCE_LIMIT_S and GPU_TRAINING_LIMIT_S
# move the split; GPU_TUNE_ARGS adds tune flags (--time 1 --leaders 2: a shorter confirmation, so
# that a tune of minutes measures points rather than reserving its budget); GPU_CHECK_TUNE_ONLY=1
# leaves out the inference check's crash regressions.
#
#   scripts/gpu_checks.sh BUNDLE OUT
set -u
BUNDLE=$1
OUT=$2
cd "$(dirname "$0")/.."
mkdir -p "$OUT/inference" "$OUT/training"
timeout "${GPU_INFERENCE_LIMIT_S:-290}" scripts/gpu_check.sh "$BUNDLE" "$OUT/inference" "${GPU_TUNE_BUDGET:-80s}" 2>&1 |
  tee "$OUT/inference.log"
GPU_TRAIN_ROUNDS=${GPU_TRAIN_ROUNDS:-3} timeout "${GPU_TRAINING_LIMIT_S:-240}" scripts/gpu_train_check.sh "$BUNDLE" \
  "$OUT/training" "${GPU_LADDER_BUDGET:-70}" 2>&1 | tee "$OUT/training.log"

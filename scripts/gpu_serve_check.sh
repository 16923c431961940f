#!/bin/bash
# Issue 62's GPU part: the built-in encoder served on CUDA with CUDA graphs, its call shapes
# planned from a log-normal length stream (--shapes planned: captured before the port opens) against
# the same server capturing each shape on its first call (--shapes lazy), each in a fresh server,
# alternated, at one open-loop rate. Prints each server's shape-plan line, its load summary (p99
# by length quarter) and its off-plan calls from /metrics. About 3 minutes.
#
#   scripts/gpu_serve_check.sh BUNDLE OUT [RATE]
set -u
BUNDLE=$(cd "$1" && pwd)
OUT=$2
RATE=${3:-400}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
. scripts/gpu_env.sh
SPEC='int64:S@0..1000;int64:S@1..2'
DIM='S=lognormal:40:0.9:4..512'
for round in 1 2; do
  for shapes in planned lazy; do
    echo "=== round $round, --shapes $shapes"
    log="$OUT/serve-$shapes-$round.log"
    timeout 120 "$TP" serve builtin:encoder --device cuda --cuda-graphs on --input "$SPEC" \
      --dim "$DIM" --buckets plan:4 --max-batch 32 --shapes "$shapes" --port 0 > "$log" 2>&1 &
    pid=$!
    for _ in $(seq 90); do grep -q 'http://' "$log" && break; sleep 1; done
    url=$(grep -o 'http://[0-9.:]*' "$log" | head -1)
    sed -n '1,3p' "$log" | cut -c1-600
    if [ -n "$url" ]; then
      timeout 60 "$TP" load "$url" --model encoder --dim "$DIM" --rate "$RATE" --duration 20s \
        --quiet 2>&1 | tee "$OUT/load-$shapes-$round.txt"
      python3 - "$url" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(sys.argv[1] + "/metrics").read().decode()
print("\n".join(l for l in text.splitlines() if l.startswith("torchperf_bucket_off_plan")))
PY
    fi
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
done

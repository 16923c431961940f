#!/usr/bin/env bash
# The kill -9 / --resume demonstration (docs/examples.md): start a 12-point tune, SIGKILL the
# supervisor after 5 points, resume, and count the journal's point records and distinct keys.
#   scripts/kill_resume_demo.sh [BUILD_DIR] [OUT_DIR]
set -uo pipefail
build=${1:-build}
out=${2:-$build/kill-resume-demo}
tp="$build/torchperf"
count() { local n; n=$(grep -c '"record":"point"' "$out/results.jsonl" 2>/dev/null); echo "${n:-0}"; }
rm -rf "$out"
space='batch=8;mode=eval;threads=1,2;grad=on,no_grad,inference;graph=eager,frozen-opt;precision=fp32'
echo "\$ torchperf tune builtin:mlp --space '$space' --time 0.5 --budget 0 --out $out &   (12 points)"
"$tp" tune builtin:mlp --space "$space" --time 0.5 --budget 0 --out "$out" --quiet > /dev/null 2>&1 &
pid=$!
while [ "$(count)" -lt 5 ]; do sleep 0.1; done
sleep 0.5  # a sixth point is then half-measured
kill -9 "$pid"; wait "$pid" 2>/dev/null; echo "kill -9 after some points: supervisor exit status $?"
sleep 0.3
echo "point records in the journal after the kill: $(count)"
echo "worker processes left running: $(pgrep -fc '__worker' || true)"
echo "\$ torchperf tune --resume $out"
start=$(date +%s.%N)
"$tp" tune --resume "$out" --quiet > "$out.summary.txt"; echo "resume exit status $?"
echo "resume wall $(/usr/bin/python3 -c 'import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))' "$start" "$(date +%s.%N)") s"
echo "point records in the journal after the resume: $(count)"
/usr/bin/python3 - "$out/results.jsonl" <<'PY'
import json, sys
points = [json.loads(l) for l in open(sys.argv[1]) if '"record":"point"' in l]
keys = [p["key"] for p in points]
print("distinct keys:", len(set(keys)), "of", len(keys), "records; sessions:",
      sorted({p["session"] for p in points}))
PY
grep "^ran" "$out.summary.txt"

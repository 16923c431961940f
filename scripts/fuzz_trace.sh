#!/usr/bin/env bash
# Fuzzes `trace`'s reader and analyses with libFuzzer (clang, with ASan and UBSan) for a while,
# growing the corpus kept in tests/fuzz/corpus/trace (which every build's tests replay).
#   scripts/fuzz_trace.sh [SECONDS=300] [JOBS=1]
# The sources are torch-free, so the target is built from them alone, without LibTorch.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-300}
jobs=${2:-1}
out="$root/build-fuzz"
mkdir -p "$out"
corpus="$root/tests/fuzz/corpus/trace"
mkdir -p "$corpus"
clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root/include" \
  "$root"/src/trace/{json_stream,trace_reader,device_summary,trace_overview,trace_views,trace_advice,trace_analysis}.cpp \
  "$root/tests/fuzz/trace_fuzzer.cpp" -lsimdjson -lz -lfmt -o "$out/trace_fuzzer"
# New inputs go to a scratch folder, merged into the kept corpus at the end.
scratch="$out/new-corpus"
mkdir -p "$scratch"
# With several jobs libFuzzer writes fuzz-N.log into the working directory: run from $out.
cd "$out"
parallel=()
if [ "$jobs" -gt 1 ]; then parallel=(-jobs="$jobs" -workers="$jobs"); fi
"$out/trace_fuzzer" -max_total_time="$seconds" "${parallel[@]}" -max_len=4096 \
  -dict="$root/tests/fuzz/trace.dict" -print_final_stats=1 "$scratch" "$corpus"
# The kept corpus is the smallest set with the coverage of both (plus the seeds and the inputs
# of bugs found, by name), so that the repository and the replay stay small.
minimal="$out/minimal-corpus"
rm -rf "$minimal"
mkdir -p "$minimal"
"$out/trace_fuzzer" -merge=1 "$minimal" "$corpus" "$scratch" > "$out/merge.log" 2>&1
# Inputs over 4 KB (mutants of the larger seeds) are dropped: 1-2 MB of corpus, not 17.
find "$minimal" -type f -size +4095c -delete
cp "$corpus"/seed-* "$corpus"/crash-* "$minimal"/ 2>/dev/null || true
rm -rf "$corpus" "$scratch"
mv "$minimal" "$corpus"
echo "corpus: $(ls "$corpus" | wc -l) inputs, $(du -sh "$corpus" | cut -f1), in $corpus"

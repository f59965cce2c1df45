#!/usr/bin/env bash
# Instructions per hot call through libncclguard.so's wrappers, against the real function, counted
# by callgrind on bench's stand-in libraries (bench/src/main/c/hot_icount.c drives NativeHotCalls'
# loops without a JVM): repeatable to the instruction, whatever the machine is doing. Needs valgrind
# and its headers, and a built tree (mvn -B install -DskipTests).
#   scripts/icount.sh [libncclguard.so ...]     default: the agent's own build
# With several libraries, one column each, named after the file.
set -euo pipefail
cd "$(dirname "$0")/.."
me=scripts/icount.sh
. scripts/hot-icount.sh
calls=${CALLS:-10000}
declare -A col
names=()
for lib in "${libs[@]}"; do
  name=$(basename "$(dirname "$lib")")/$(basename "$lib")
  [ ${#libs[@]} -eq 1 ] && name=$(basename "$lib")
  names+=("$name")
  d=$(mktemp -d $out/run.XXXXXX)
  LD_LIBRARY_PATH=$stub valgrind --tool=callgrind --callgrind-out-file="$d/cg.%p" \
    $out/hot_icount "$lib" $hot "$calls" >"$d/log" 2>&1 || { cat "$d/log" >&2; exit 1; }
  for f in "$d"/cg.*.*; do
    what=$(sed -n 's/^desc: Trigger: Client Request: //p' "$f")
    total=$(sed -n 's/^totals: //p' "$f" | cut -d' ' -f1)
    [ -n "$what" ] && col["$name|$what"]=$total
  done
  rm -rf "$d"
done
printf '%-22s' "instructions per call"
for name in "${names[@]}"; do printf ' | %24s' "$name: added (wrapper)"; done
echo
for fn in cudaEventQuery cudaEventRecord ncclAllReduce cudaGetDevice cudaStreamQuery cudaStreamWaitEvent pointer-dispatch framework framework-default framework-ring; do
  printf '%-22s' "$fn"
  for name in "${names[@]}"; do
    w=${col["$name|$fn/wrapper/$calls"]:-}
    r=${col["$name|$fn/real/$calls"]:-}
    if [ -z "$w" ] || [ -z "$r" ]; then printf ' | %24s' "?"; continue; fi
    printf ' | %24s' "$(awk -v w="$w" -v r="$r" -v n="$calls" 'BEGIN { printf "%.1f (%.1f)", (w - r) / n, w / n }')"
  done
  echo
done

#!/usr/bin/env bash
# Cache lines the agent's native part misses per framework operation when the work between
# operations evicted them, as PyTorch's interpreter does: bench's ring loop (hot_framework_ring: 2
# creations, 2 records, an all-reduce, a query, 2 releases, each operation's events living 16
# operations) on the stand-in libraries, with EVICT bytes (2 MiB) written between operations, under
# cachegrind with fixed caches (D1 32 KiB 8-way, LL 2 MiB 16-way standing for an L2; 64-byte lines),
# so the count is the same on every machine. Misses in libncclguard.so's own functions, per
# operation: the runs of 200 + 2,200 and 200 + 200 operations, differenced (no set-up counted).
# Its code too: cachegrind's first-level instruction cache is not evicted by data stores, so a tiny
# one (1 KiB) stands for the interpreter's code evicting it, and the code lines an operation
# fetches from the LL are the lines of the agent's code it runs (scripts/evict-time.sh times both).
# What the agent pays on such a loop is about these lines (docs/performance.md). Needs valgrind and
# a built tree (mvn -B install -DskipTests).
#   scripts/lines.sh [libncclguard.so ...]     default: the agent's own build
set -euo pipefail
cd "$(dirname "$0")/.."
me=scripts/lines.sh
. scripts/hot-icount.sh
d=$(mktemp -d $out/lines.XXXXXX)
trap 'rm -rf "$d"' EXIT
# misses (D1, LL) and instructions in the library's functions, from one cachegrind run
count() { # lib ops file
  LD_LIBRARY_PATH=$stub valgrind --tool=cachegrind --cache-sim=yes --I1=1024,2,64 --D1=32768,8,64 --LL=2097152,16,64 \
    --cachegrind-out-file="$3" $out/hot_icount "$1" $hot "$2" --lines >"$3.log" 2>&1 || { cat "$3.log" >&2; exit 1; }
  nm --defined-only "$1" | awk '$2 ~ /[tT]/ {print $3}' | sort -u >"$3.fns"
  # cachegrind's lines: fl= file, fn= function, then "line Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw";
  # the shipped library has no debug lines (fl=???), the stand-ins, whose functions share the
  # wrappers' names, have theirs
  awk -v fns="$3.fns" 'BEGIN {while ((getline f < fns) > 0) own[f] = 1}
    /^fl=/ {anon = ($0 == "fl=???"); next}
    /^fn=/ {sub(/^fn=/, ""); on = anon && ($0 in own); next}
    /^[0-9]/ && on {ir += $2; d1 += $6 + $9; ll += $7 + $10; il += $4}
    END {print ir, d1, ll, il}' "$3"
}
printf '%-40s %14s %14s %14s %14s\n' "lines missed per operation" "LL (L2) misses" "D1 misses" "code (LL)" "instructions"
for lib in "${libs[@]}"; do
  read -r ir1 d11 ll1 il1 < <(count "$lib" 200 "$d/short")
  read -r ir2 d12 ll2 il2 < <(count "$lib" 2200 "$d/long")
  printf '%-40s %14.1f %14.1f %14.1f %14.1f\n' "$(basename "$(dirname "$lib")")/$(basename "$lib")" \
    "$(awk -v a="$ll2" -v b="$ll1" 'BEGIN {print (a - b) / 2000}')" \
    "$(awk -v a="$d12" -v b="$d11" 'BEGIN {print (a - b) / 2000}')" \
    "$(awk -v a="$il2" -v b="$il1" 'BEGIN {print (a - b) / 2000}')" \
    "$(awk -v a="$ir2" -v b="$ir1" 'BEGIN {print (a - b) / 2000}')"
done

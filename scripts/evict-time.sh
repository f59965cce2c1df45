#!/usr/bin/env bash
# Time, not a model: what the agent adds to ProcessGroupNCCL's loop (hot_framework_watchdog: an
# event an operation made, recorded, queried by a second thread, released later) when work between
# operations evicts its code and data, as PyTorch's interpreter does: EVICT bytes written (2 MiB)
# and EVICT_CODE bytes of no-ops run (512 KiB) between operations, on bench's stand-ins, legacy
# stream. Each process alternates ROUNDS (40) rounds of N (500) operations tracked and forwarded to
# the stand-ins directly; its figure is the median of the rounds' differences of the launching
# thread's CPU per operation. The libraries alternate process by process, REPS (10) times; the end
# lines give each library's median over its processes and, against the first library, the median
# of the paired differences. Needs a built tree (mvn -B install -DskipTests) and valgrind's headers.
#   scripts/evict-time.sh [libncclguard.so ...]     default: the agent's own build
set -euo pipefail
cd "$(dirname "$0")/.."
me=scripts/evict-time.sh need_valgrind=0
. scripts/hot-icount.sh
d=$(mktemp -d $out/evict.XXXXXX)
trap 'rm -rf "$d"' EXIT
median() { sort -n | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for r in $(seq 1 "${REPS:-10}"); do
  i=0
  for lib in "${libs[@]}"; do
    LEGACY=1 EVICT=${EVICT:-2097152} EVICT_CODE=${EVICT_CODE:-524288} ROUNDS=${ROUNDS:-40} LD_LIBRARY_PATH=$stub \
      $out/hot_icount "$lib" $hot "${N:-500}" --watchdog >"$d/run" 2>&1 || { cat "$d/run" >&2; exit 1; }
    # "round K tracked|real T ns an operation (this thread's CPU C)": C(tracked) - C(real), round by round
    m=$(sed -n 's/^round \([0-9]*\) *\(tracked\|real\) .*CPU \([0-9.]*\))$/\1 \2 \3/p' "$d/run" |
      awk '$2 == "tracked" {t[$1] = $3} $2 == "real" {if ($1 in t) print t[$1] - $3}' | median)
    echo "$m" >>"$d/lib$i"
    printf 'process %2d  %-40s %8.0f ns added an operation\n' "$r" "$(basename "$(dirname "$lib")")/$(basename "$lib")" "$m"
    i=$((i + 1))
  done
done
i=0
for lib in "${libs[@]}"; do
  printf '%-40s median %6.0f ns added an operation' "$(basename "$(dirname "$lib")")/$(basename "$lib")" "$(median <"$d/lib$i")"
  [ $i -gt 0 ] && printf ', paired against the first %+6.0f ns' "$(paste "$d/lib$i" "$d/lib0" | awk '{print $1 - $2}' | median)"
  echo
  i=$((i + 1))
done

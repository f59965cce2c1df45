#!/bin/sh
# What creations and releases write under the map lock (ng_locked: the lock word and its counts)
# and what NCCL's profiler events write (the plugin's pool) each fill whole cache lines of
# libncclguard.so (64-byte aligned, a multiple of 64 bytes), and so do the maps, which every lookup
# reads: no variable another thread reads on its own hot path can share a line with what is
# written (false sharing; the map lock word once shared the wrappers' gate words' line). The words
# a creation reads and almost nothing writes (NG_READ_MOSTLY, ng_log.h), the gate word among them,
# fill one line: the section ng_read_mostly, 64-byte aligned, 64 bytes at most.
set -e
lib=$1
fail=0
sec=$(readelf -SW "$lib" | sed -n 's/.* ng_read_mostly *[A-Z]* *\([0-9a-f]*\) [0-9a-f]* \([0-9a-f]*\) .*/\1 \2/p')
if [ -z "$sec" ]; then
  echo "check_lines: $lib has no section ng_read_mostly (NG_READ_MOSTLY, ng_log.h)" >&2
  fail=1
else
  set -- $sec
  gate=$(nm "$lib" | awk '$3 == "ng_gate" {print $1; exit}')
  if [ $((0x$1 % 64)) -ne 0 ] || [ $((0x$2)) -gt 64 ]; then
    echo "check_lines: the read-mostly words (section ng_read_mostly at 0x$1, $((0x$2)) bytes) do not fit one cache line: tag fewer words NG_READ_MOSTLY, or smaller ones" >&2
    fail=1
  elif [ -z "$gate" ] || [ $((0x$gate)) -lt $((0x$1)) ] || [ $((0x$gate)) -ge $((0x$1 + 0x$2)) ]; then
    echo "check_lines: the gate word (ng_gate) is not in the read-mostly line (section ng_read_mostly)" >&2
    fail=1
  fi
fi
for name in ng_locked pool ng_events ng_streams ng_comms; do
  line=$(nm -S "$lib" | awk -v n="$name" '$4 == n {print $1, $2; exit}')
  if [ -z "$line" ]; then
    echo "check_lines: $lib has no symbol $name" >&2
    fail=1
    continue
  fi
  set -- $line
  if [ $((0x$1 % 64)) -ne 0 ] || [ $((0x$2 % 64)) -ne 0 ]; then
    echo "check_lines: $name (at 0x$1, $((0x$2)) bytes) shares a cache line with other variables" >&2
    fail=1
  fi
done
[ $fail -eq 0 ] && echo "check_lines: the hot-written variables each fill their own cache lines, the read-mostly words one"
exit $fail

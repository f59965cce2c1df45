#!/bin/sh
# What creations and releases write under the map lock (ng_locked: the lock word and its counts)
# and what NCCL's profiler events write (the plugin's pool) each fill whole cache lines of
# libncclguard.so (64-byte aligned, a multiple of 64 bytes), and so do the maps, which every lookup
# reads, and the gate word, which every wrapped call reads: no variable another thread reads on its own hot path can share a line with what is
# written (false sharing; the map lock word once shared the wrappers' gate words' line).
set -e
lib=$1
fail=0
for name in ng_locked pool ng_events ng_streams ng_comms ng_gate; do
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
[ $fail -eq 0 ] && echo "check_lines: the hot-written variables each fill their own cache lines"
exit $fail

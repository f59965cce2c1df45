#!/bin/sh
# The variables that creations, releases and NCCL's profiler events write on their hot paths each
# fill whole cache lines of libncclguard.so (64-byte aligned, a multiple of 64 bytes): no variable
# another thread reads on its own hot path can share a line with one (false sharing; the map lock
# word once shared the wrappers' gate words' line). The maps' own layout: ng_map.h.
set -e
lib=$1
fail=0
for name in writers pool lazy_created lazy_released lazy_adopted hits ng_events ng_streams ng_comms; do
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

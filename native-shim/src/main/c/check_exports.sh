#!/bin/sh
# What libncclguard.so exports: every catalog function (cudart ones under the version node
# libcudart.so.13, NCCL and driver ones unversioned), JNI_OnLoad, ncclProfiler_v4/_v5/_v6 and ncclguard_test,
# nothing else; and no link to libnccl or libcudart.
set -e
lib=$1
header=$2
fail=0
expected=$(mktemp)
actual=$(mktemp)
trap 'rm -f "$expected" "$actual"' EXIT
sed -n 's/^  X([0-9]*, \([a-zA-Z0-9_]*\), \(NCCL\|CUDART\|CUDA\),.*/\1 \2/p' "$header" |
  while read -r name lib_kind; do
    if [ "$lib_kind" = CUDART ]; then echo "$name@@libcudart.so.13"; else echo "$name"; fi
  done >"$expected"
printf '%s\n' JNI_OnLoad ncclProfiler_v4 ncclProfiler_v5 ncclProfiler_v6 ncclguard_test >>"$expected"
sort -o "$expected" "$expected"
nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sort >"$actual"
if ! diff -u "$expected" "$actual"; then
  echo "check_exports: $lib exports differ from the catalog's (- expected, + actual)" >&2
  fail=1
fi
if readelf -d "$lib" | grep -E 'NEEDED.*(libnccl|libcudart|libcuda)' >/dev/null; then
  echo "check_exports: $lib links libnccl, libcudart or libcuda" >&2
  fail=1
fi
[ $fail -eq 0 ] && echo "check_exports: $(wc -l <"$actual") exports as the catalog says"
exit $fail

#!/usr/bin/env bash
# The emulator's libraries look like the real ones to the loader: sonames, symlinks, the symbol
# version node of the real libcudart, the full NCCL 2.29.3 API with its p-aliases and nothing else,
# and an RPATH that makes libnccl load the emulated libcudart even where a real one is installed;
# libnccl_static.a defining the same API and nothing else; neither needing a symbol of the runtime.
set -euo pipefail
# (grep reads its input to the end, never -q: under pipefail, readelf killed by SIGPIPE when grep -q
# stops early would fail the check at random)
dir=$1
fail=0
die() { echo "check_elf: $*" >&2; fail=1; }

[ "$(readlink "$dir/libnccl.so")" = libnccl.so.2 ] || die "libnccl.so is not a link to libnccl.so.2"
[ "$(readlink "$dir/libcudart.so")" = libcudart.so.13 ] || die "libcudart.so is not a link to libcudart.so.13"
readelf -d "$dir/libnccl.so.2" | grep 'SONAME.*\[libnccl.so.2\]' >/dev/null || die "libnccl.so.2: wrong SONAME"
[ "$(readlink "$dir/libcuda.so")" = libcuda.so.1 ] || die "libcuda.so is not a link to libcuda.so.1"
readelf -d "$dir/libcuda.so.1" | grep 'SONAME.*\[libcuda.so.1\]' >/dev/null || die "libcuda.so.1: wrong SONAME"
readelf -d "$dir/libcudart.so.13" | grep 'SONAME.*\[libcudart.so.13\]' >/dev/null || die "libcudart.so.13: wrong SONAME"
readelf -d "$dir/libnccl.so.2" | grep 'NEEDED.*\[libcudart.so.13\]' >/dev/null || die "libnccl.so.2 does not need libcudart.so.13"
readelf -d "$dir/libnccl.so.2" | grep '(RPATH).*\[\$ORIGIN\]' >/dev/null || die "libnccl.so.2: no DT_RPATH \$ORIGIN"
readelf -V "$dir/libcudart.so.13" | grep 'Name: libcudart.so.13' >/dev/null || die "libcudart.so.13: no version node libcudart.so.13"

# every function NCCL 2.29.3 exports (its NCCL_API functions: nccl.h and the device API's host
# side), and its profiling alias
api="ncclMemAlloc ncclMemFree ncclGetVersion ncclGetUniqueId ncclCommInitRankConfig
ncclCommInitRank ncclCommInitAll ncclCommFinalize ncclCommDestroy ncclCommAbort ncclCommSplit
ncclCommShrink ncclCommInitRankScalable ncclGetErrorString ncclGetLastError ncclResetDebugInit
ncclCommGetAsyncError ncclCommCount ncclCommCuDevice ncclCommUserRank ncclCommRegister
ncclCommDeregister ncclCommWindowRegister ncclCommWindowDeregister ncclRedOpCreatePreMulSum
ncclRedOpDestroy ncclReduce ncclBcast ncclBroadcast ncclAllReduce ncclReduceScatter ncclAllGather
ncclAlltoAll ncclGather ncclScatter ncclSend ncclRecv ncclGroupStart ncclGroupEnd
ncclGroupSimulateEnd
ncclCommRevoke ncclCommGetUniqueId ncclCommGrow ncclWinGetUserPtr ncclPutSignal ncclSignal
ncclWaitSignal
ncclCommQueryProperties ncclDevCommCreate ncclDevCommDestroy ncclGetLsaMultimemDevicePointer
ncclGetMultimemDevicePointer ncclGetLsaDevicePointer ncclGetPeerDevicePointer ncclTeamWorld
ncclTeamLsa ncclTeamRail ncclTeamRankToWorld ncclTeamRankToLsa ncclLsaBarrierCreateRequirement
ncclGinBarrierCreateRequirement ncclLLA2ACalcSlots ncclLLA2ACreateRequirement"
exported=$(nm -D --defined-only "$dir/libnccl.so.2" | awk '{print $3}' | sort)
expected=$(for f in $api; do echo "$f"; echo "p$f"; done | sort)
if [ "$exported" != "$expected" ]; then
  die "libnccl.so.2 exports differ from the NCCL 2.29.3 API:"
  diff <(echo "$expected") <(echo "$exported") >&2 || true
fi
# the static archive: one object that defines NCCL's API and nothing else globally
archived=$(nm -g --defined-only "$dir/libnccl_static.a" | awk 'NF == 3 {print $3}' | sort)
if [ "$archived" != "$expected" ]; then
  die "libnccl_static.a defines other globals than the NCCL API:"
  diff <(echo "$expected") <(echo "$archived") >&2 || true
fi

# libcuda.so.1 carries a copy of the runtime inside: none of its names may be exported
drv_others=$(nm -D --defined-only "$dir/libcuda.so.1" | awk 'NF == 3 && $2 != "A" {print $3}' | grep -v -E '^cu[A-Z]' || true)
[ -z "$drv_others" ] || die "libcuda.so.1 exports other than driver names: $drv_others"
nm -D --defined-only "$dir/libcuda.so.1" | grep ' T cuGetProcAddress_v2$' >/dev/null || die "libcuda.so.1: no cuGetProcAddress_v2"

others=$(nm -D --defined-only "$dir/libcudart.so.13" | awk 'NF == 3 && $2 != "A" {print $3}' \
  | sed 's/@.*//' | grep -v -E '^(cuda.*|emu_rt_interface)$' || true)
[ -z "$others" ] || die "libcudart.so.13 exports unexpected symbols: $others"
nm -D --defined-only "$dir/libcudart.so.13" | grep ' D emu_rt_interface@@libcudart.so.13$' >/dev/null \
  || die "libcudart.so.13: no emu_rt_interface, the table libnccl looks up"

# NCCL needs nothing of the runtime through the dynamic linker (it looks the table up with dlsym):
# a real libcudart.so.13 loaded first must not make it fail on an undefined symbol
for lib in "$dir/libnccl.so.2" "$dir/libnccl_static.a"; do
  needs=$(nm -u "$lib" 2>/dev/null | awk '{print $NF}' | grep -E '^(cuda|emu_)' | sort -u || true)
  [ -z "$needs" ] || die "$(basename "$lib") needs symbols of the runtime: $needs"
done
nm -D --defined-only "$dir/libcudart.so.13" | grep ' cudaStreamCreate@@libcudart.so.13$' >/dev/null \
  || die "libcudart.so.13: cudaStreamCreate is not versioned libcudart.so.13"

# a real libcudart on the library path must not win over the emulator's
real=/usr/local/cuda-13.0/lib
resolved=$(LD_LIBRARY_PATH=$real ldd "$dir/libnccl.so.2" | awk '/libcudart.so.13/ {print $3}')
[ "$resolved" = "$(cd "$dir" && pwd)/libcudart.so.13" ] || die "libnccl.so.2 loads $resolved, not the emulated libcudart"

# what JavaCPP 1.5.13's JNI library for NCCL links (its presets of NCCL 2.29) is all there
jni=${2:-}
if [ -n "$jni" ] && [ -f "$jni" ]; then
  missing=$(nm -D --undefined-only "$jni" | awk '{print $2}' | grep -E '^p?nccl' | sed 's/@.*//' \
    | sort -u | comm -23 - <(echo "$exported") || true)
  if [ -n "$missing" ]; then
    die "libnccl.so.2 lacks what $(basename "$jni") links: $missing"
  else
    echo "check_elf: every NCCL symbol $(basename "$jni") links is exported"
  fi
else
  echo "NOTE: JavaCPP's libjninccl.so not at '${jni}': its symbols are not checked (mvn fetches it)"
fi

[ $fail = 0 ] && echo "check_elf: ok ($dir)"
exit $fail

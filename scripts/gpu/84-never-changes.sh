# The native part never changes what the application does, on real NCCL and CUDA (issue 29), one GPU:
#   1. the DeepEP-style runtime linked with this machine's libnccl_static.a, NCCL's API left exported
#      (as its archive leaves it: the runtime's own calls reach the wrappers) and its JNI close ending
#      in `return ncclCommDestroy(...)` (a jump at -O2: the wrapper's return address is the JVM's);
#      checked to be a jump. clean: exit 0 and no leak, as without the agent; leaky: the communicator
#      reported; cleanup: destroyed by the agent.
#   2. the DeepEP-style runtime (NCCL by soname) under a second interposer in LD_PRELOAD that forwards
#      with dlsym(RTLD_NEXT) (native-shim/src/test/c/other_interposer.c, built here): exit 0 and no
#      leak, as without the agent.
# Each check prints one "PASS:" or "FAIL:" line; everything else goes to the log.
# Sourced by scripts/gpu-check.sh, or run alone: scripts/gpu/84-never-changes.sh [OUTDIR] (default $OUT),
# after scripts/gpu-prepare.sh (.gpu/, with the JDK's include/ in .gpu/jdk-include).
if [ -z "${log:-}" ]; then
  set -u
  cd "$(dirname "$0")/../.."
  out=${1:-${OUT:?usage: scripts/gpu/84-never-changes.sh OUTDIR (or set OUT)}}
  . scripts/gpu/lib.sh
  gpu_env "$out"
  say "# ncclguard never changes the application, on $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
fi
part_begin never-changes "$reports/never-changes"
nc=$part_dir
ep=(-jar "$samples")

# 1. static NCCL, exported, with a tail-called destroy
tail_lib=$nc/libep_runtime_static_tail.so
nccl_a=${NCCL_STATIC_A:-/usr/lib/x86_64-linux-gnu/libnccl_static.a}
cudart_dir=${CUDART_DIR:-$(dirname "$(ls /usr/local/cuda/targets/x86_64-linux/lib/libcudart.so* /usr/local/cuda*/lib64/libcudart.so* 2>/dev/null | head -1)" 2>/dev/null)}
if [ ! -f "$nccl_a" ] || [ ! -d .gpu/jdk-include ]; then
  pcheck "static NCCL tail-call runtime built" 1 "missing $nccl_a or .gpu/jdk-include (scripts/gpu-prepare.sh)"
elif ! gcc -std=gnu11 -O2 -fPIC -DEP_STATIC -DEP_TAIL_CLOSE -I.gpu/jdk-include -I.gpu/jdk-include/linux -pthread -shared \
    -o "$tail_lib" samples/src/main/c/ep_runtime.c "$nccl_a" \
    -L"$cudart_dir" -l:libcudart.so.13 -lstdc++ -lm -ldl -lrt >>"$log" 2>&1; then
  pcheck "static NCCL tail-call runtime built" 1 "gcc failed against $nccl_a (see the log)"
else
  exported=$(nm -D --defined-only "$tail_lib" | grep -cE ' T p?ncclCommDestroy$')
  jumps=$(objdump -d --no-show-raw-insn "$tail_lib" | awk '/EpStaticRuntime_close>:/ {on=1; next} on && /^$/ {exit} on' | grep -cE 'jmp .*<p?ncclCommDestroy(@plt)?>')
  pcheck "static NCCL tail-call runtime built against $nccl_a: NCCL's API exported, close ends in a jump to ncclCommDestroy" \
    $([ "$exported" -ge 1 ] && [ "$jumps" -ge 1 ]; echo $?) "exported ncclCommDestroy $exported, jumps in close $jumps"
  sp=(-Dncclguard.samples.ep.staticLibrary="$tail_lib" -Dncclguard.samples.ep.tailClose=true)
  prun static-tail-clean-without none NCCL_DEBUG=WARN -- "${sp[@]}" "${ep[@]}" ep-static-clean --ranks 1
  rc0=$?
  prun static-tail-clean "report=$nc/static-tail-clean.json" NCCL_DEBUG=WARN -- "${sp[@]}" "${ep[@]}" ep-static-clean --ranks 1
  rc=$?
  f=$nc/static-tail-clean.json
  m=$(grep -c 'no loaded .* defines it' "$nc/static-tail-clean.out")
  pcheck "static NCCL, tail-called destroy, clean: exit 0 as without the agent ($rc0), no leak, no failed call" \
    $([ "$rc" -eq 0 ] && [ "$rc0" -eq 0 ] && no_leak "$f" && [ "$m" -eq 0 ]; echo $?) "exit $rc (without $rc0), missing-function lines $m, see $f"
  prun static-tail-leaky "report=$nc/static-tail-leaky.json" NCCL_DEBUG=WARN -- "${sp[@]}" "${ep[@]}" ep-static-leaky --ranks 1
  rc=$?
  f=$nc/static-tail-leaky.json
  l=$(grep -cE '"kind": "comm"' "$f" 2>/dev/null || true)
  pcheck "static NCCL, tail-call runtime, leaky: exit 0, the communicator reported" \
    $([ "$rc" -eq 0 ] && [ "$l" -ge 1 ]; echo $?) "exit $rc, comm leaks $l"
  prun static-tail-cleanup "action=cleanup,report=$nc/static-tail-cleanup.json" NCCL_DEBUG=WARN -- "${sp[@]}" "${ep[@]}" ep-static-leaky --ranks 1
  rc=$?
  f=$nc/static-tail-cleanup.json
  d=$(grep -cE '"cleanup": "(destroyed|aborted)"' "$f" 2>/dev/null || true)
  cf=$(sed -n 's/.*"cleanupFailed": \([0-9]*\).*/\1/p' "$f" | head -1)
  pcheck "static NCCL, tail-call runtime, cleanup: exit 0, the communicator destroyed, nothing failed" \
    $([ "$rc" -eq 0 ] && [ "$d" -ge 1 ] && [ "${cf:-1}" -eq 0 ]; echo $?) "exit $rc, destroyed $d, cleanupFailed ${cf:-none}"
fi

# 2. the DeepEP-style runtime under another interposer in LD_PRELOAD
other=$nc/libng_other.so
if ! gcc -std=gnu11 -O2 -fPIC -shared -Iabi -o "$other" native-shim/src/test/c/other_interposer.c -ldl >>"$log" 2>&1; then
  pcheck "second interposer built" 1 "gcc failed (see the log)"
else
  prun other-clean-without none LD_PRELOAD="$other" NCCL_DEBUG=WARN -- "${ep[@]}" ep-clean --ranks 1
  rc0=$?
  prun other-clean "report=$nc/other-clean.json" LD_PRELOAD="$other" NCCL_DEBUG=WARN -- "${ep[@]}" ep-clean --ranks 1
  rc=$?
  f=$nc/other-clean.json
  pcheck "DeepEP-style runtime under a second LD_PRELOAD interposer: exit 0 as without the agent ($rc0), no leak" \
    $([ "$rc" -eq 0 ] && [ "$rc0" -eq 0 ] && no_leak "$f"; echo $?) "exit $rc (without $rc0; 139 is the loop this fixed), see $f"
  prun other-leaky "report=$nc/other-leaky.json" LD_PRELOAD="$other" NCCL_DEBUG=WARN -- "${ep[@]}" ep-leaky --ranks 1
  rc=$?
  f=$nc/other-leaky.json
  l=$(grep -cE '"kind": "comm"' "$f" 2>/dev/null || true)
  pcheck "DeepEP-style runtime under a second interposer, leaky: exit 0, the communicator reported" \
    $([ "$rc" -eq 0 ] && [ "$l" -ge 1 ]; echo $?) "exit $rc, comm leaks $l"
fi
part_end

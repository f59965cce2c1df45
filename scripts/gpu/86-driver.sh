# A JNI library built by nvcc with its defaults (the CUDA runtime linked in statically: its stream
# and event calls reach libcuda.so.1 through cuGetProcAddress), on real CUDA, one GPU (issue 32):
# samples/src/main/c/scudart_runtime.c built here by nvcc, loaded by the samples' ep-scudart-*
# scenarios (-Dncclguard.samples.scudart.library). clean: exit 0, nothing reported, as without the
# agent; leaky: its stream and event reported (cuStreamCreate, cuEventCreate) with the Java frame
# that entered the library; cleanup: both released by the agent through the driver.
# Each check prints one "PASS:" or "FAIL:" line; everything else goes to the log.
# Sourced by scripts/gpu-check.sh, or run alone: scripts/gpu/86-driver.sh [OUTDIR] (default $OUT),
# after scripts/gpu-prepare.sh (.gpu/, with the JDK's include/ in .gpu/jdk-include).
if [ -z "${log:-}" ]; then
  set -u
  cd "$(dirname "$0")/../.."
  out=${1:-${OUT:?usage: scripts/gpu/86-driver.sh OUTDIR (or set OUT)}}
  . scripts/gpu/lib.sh
  gpu_env "$out"
  say "# ncclguard and a static CUDA runtime, on $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
fi
part_begin driver "$reports/driver"
d=$part_dir
nvcc=${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc /usr/local/cuda-13.0/bin/nvcc 2>/dev/null | head -1)}
lib=$d/libscudart_nvcc.so
if [ -z "$nvcc" ] || [ ! -d .gpu/jdk-include ]; then
  pcheck "nvcc-built runtime" 1 "no nvcc (set NVCC) or no .gpu/jdk-include (scripts/gpu-prepare.sh)"
elif ! "$nvcc" -shared -Xcompiler -fPIC -I.gpu/jdk-include -I.gpu/jdk-include/linux -o "$lib" \
    samples/src/main/c/scudart_runtime.c >>"$log" 2>&1; then
  pcheck "nvcc-built runtime" 1 "nvcc failed (see the log)"
else
  deps=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | paste -sd' ')
  say "nvcc $("$nvcc" --version | sed -n 's/.*release \([^,]*\).*/\1/p'); $lib needs: $deps"
  pcheck "nvcc's default build links the runtime statically (no libcudart among its needs: $deps)" \
    $(echo "$deps" | grep -qv 'libcudart'; echo $?) "it needs $deps"
  sc=("-Dncclguard.samples.scudart.library=$lib" -jar "$samples")

  prun clean-without none -- "${sc[@]}" ep-scudart-clean --iters 100
  rc0=$?
  prun clean "report=$d/clean.json" -- "${sc[@]}" ep-scudart-clean --iters 100
  rc=$?
  f=$d/clean.json
  pcheck "clean: exit 0 as without the agent ($rc0), no leak" \
    $([ "$rc" -eq 0 ] && [ "$rc0" -eq 0 ] && no_leak "$f"; echo $?) "exit $rc (without $rc0), see $f"

  prun leaky "report=$d/leaky.json" -- "${sc[@]}" ep-scudart-leaky --iters 100
  rc=$?
  f=$d/leaky.json
  pcheck "leaky: its stream and event reported through the driver (cuStreamCreate, cuEventCreate), the Java frame first" \
    $([ "$rc" -eq 0 ] && grep -q '"api": "cuStreamCreate' "$f" && grep -q '"api": "cuEventCreate' "$f" \
      && grep -q 'ScudartRuntime.open(Native Method)' "$f"; echo $?) "exit $rc, see $f"

  prun cleanup "action=cleanup,report=$d/cleanup.json" -- "${sc[@]}" ep-scudart-leaky --iters 100
  rc=$?
  f=$d/cleanup.json
  failed=$(grep -o '"cleanupFailed": [0-9]*' "$f" 2>/dev/null | grep -o '[0-9]*$')
  nolib=$(grep -c 'was called but no loaded' "$d/cleanup.out")
  pcheck "cleanup: both released by the agent through the driver, exit 0" \
    $([ "$rc" -eq 0 ] && [ "${failed:-1}" -eq 0 ] && [ "$nolib" -eq 0 ] && grep -q '"cleanup": "' "$f"; echo $?) \
    "exit $rc, cleanupFailed ${failed:-?}, 'no loaded library' lines $nolib, see $f"
fi
say ""
part_end

# The agent's native part (libncclguard.so) on real NCCL and CUDA, one GPU: the DeepEP-style runtime
# (NCCL and CUDA called from C) reported, clean and cleaned up (NCCL's INFO lines confirm the destroy),
# a communicator made on a pthread of the library, NCCL's profiler plugin loaded with the interposer
# off, the report's commIds equal to NCCL's INFO lines, the runtime linked with this machine's
# libnccl_static.a (plugin only), and NativeHotCalls under the agent on real cudart.
# Each pcheck prints one "PASS:" or "FAIL:" line; everything else goes to the log.
# Sourced by scripts/gpu-check.sh, or run alone: scripts/gpu/80-native.sh [OUTDIR] (default $OUT),
# after scripts/gpu-prepare.sh (.gpu/, with the JDK's include/ in .gpu/jdk-include).
if [ -z "${log:-}" ]; then
  set -u
  cd "$(dirname "$0")/../.."
  out=${1:-${OUT:?usage: scripts/gpu/80-native.sh OUTDIR (or set OUT)}}
  . scripts/gpu/lib.sh
  gpu_env "$out"
  say "# ncclguard native part on $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
fi
part_begin native "$reports/native"
n=$part_dir
# count PATTERN FILE: lines of FILE matching the extended regex
count() { grep -cE "$1" "$2" 2>/dev/null || true; }
ep=(-jar "$samples")

# 1. leaky: the communicator, stream and event made in C, each with the Java frame that entered it
prun ep-leaky "report=$n/ep-leaky.json" NCCL_DEBUG=WARN -- "${ep[@]}" ep-leaky --ranks 1
f=$n/ep-leaky.json
c=$(count '"bridge": "native"' "$f"); l=$(count '"callerLibrary": "libep_runtime.so"' "$f")
s=$(count '"dev.ncclguard.samples.ep.EpRuntime.open\(Native Method\)"' "$f")
pcheck "ep-leaky: comm, stream and event reported through the interposer with libep_runtime.so and the Java frame" \
  $([ "$c" -eq 3 ] && [ "$l" -eq 3 ] && [ "$s" -eq 3 ]; echo $?) "bridge native $c, callerLibrary $l, EpRuntime.open frames $s (want 3 each)"

# 2. clean: nothing leaked, the communicator created and released
prun ep-clean "report=$n/ep-clean.json" NCCL_DEBUG=WARN -- "${ep[@]}" ep-clean --ranks 1
f=$n/ep-clean.json
pcheck "ep-clean: no leak, 1 communicator created and released" \
  $(grep -q '"leaks": \[ \]\|"leaks": \[\]' "$f" && grep -q '"commsCreated": 1,' "$f" && grep -q '"commsReleased": 1,' "$f"; echo $?) \
  "see $f"

# 3. cleanup: the agent destroys the leaked communicator; NCCL's INFO line says so
prun ep-cleanup "action=cleanup,report=$n/ep-cleanup.json" NCCL_DEBUG=INFO -- "${ep[@]}" ep-leaky --ranks 1
f=$n/ep-cleanup.json
d=$(count '"cleanup": "destroyed"' "$f"); i=$(count 'NCCL INFO comm 0x[0-9a-f]+ rank 0 nRanks 1 .*Destroy COMPLETE|NCCL INFO .*ncclCommDestroy.*COMPLETE|Destroy COMPLETE' "$n/ep-cleanup.out")
pcheck "ep-cleanup: the communicator destroyed by the agent, NCCL's INFO line confirms it" \
  $([ "$d" -ge 1 ] && [ "$i" -ge 1 ]; echo $?) "cleanup destroyed $d, NCCL destroy INFO lines $i"

# 4. a communicator made on a pthread of the library: the native caller, no Java stack
prun ep-pthread "report=$n/ep-pthread.json" NCCL_DEBUG=WARN -- "${ep[@]}" ep-pthread --ranks 1
f=$n/ep-pthread.json
pcheck "ep-pthread: the communicator carries a native backtrace from libep_runtime.so" \
  $(grep -q '"libep_runtime.so+0x' "$f"; echo $?) "no nativeStack frame of libep_runtime.so in $f"

# 5. NCCL loads the plugin with the interposer off; the communicator is seen by the plugin alone
prun ep-plugin-only "native=off,report=$n/ep-plugin-only.json" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV -- "${ep[@]}" ep-leaky --ranks 1
f=$n/ep-plugin-only.json
p=$(count 'Successfully loaded external profiler plugin|PROFILER/Plugin: Loaded ncclguard' "$n/ep-plugin-only.out")
b=$(count '"bridge": "nccl-profiler"' "$f")
pcheck "plugin loaded by real NCCL with native=off, the communicator reported through it" \
  $([ "$p" -ge 1 ] && [ "$b" -eq 1 ]; echo $?) "plugin INFO lines $p, nccl-profiler leaks $b"

# 6. the report's commId is NCCL's (its Init COMPLETE line), from the interposer and from the plugin
for case in ep-leaky:native=on ep-plugin-only:native=off; do
  name=${case%%:*}-ids; opt=${case#*:}
  prun "$name" "$opt,text=none,report=$n/$name.json" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT -- "${ep[@]}" ep-leaky --ranks 1
  printed=$(sed -n 's/.*commId 0x\([0-9a-f]*\) - Init COMPLETE.*/\1/p' "$n/$name.out" | head -1)
  printed=$(printf '%016s' "$printed" | tr ' ' 0)
  reported=$(sed -n 's/.*"commId": "\([0-9a-f]*\)".*/\1/p' "$n/$name.json" | head -1)
  pcheck "commId with $opt equals NCCL's Init COMPLETE line" \
    $([ -n "$reported" ] && [ "$printed" = "$reported" ]; echo $?) "NCCL printed $printed, the report says ${reported:-nothing}"
done

# 7. the runtime with this machine's NCCL linked inside it: seen by the plugin only, with the Java frame
static_lib=$n/libep_runtime_static.so
nccl_a=${NCCL_STATIC_A:-/usr/lib/x86_64-linux-gnu/libnccl_static.a}
cudart_dir=${CUDART_DIR:-$(dirname "$(ls /usr/local/cuda/targets/x86_64-linux/lib/libcudart.so* /usr/local/cuda*/lib64/libcudart.so* 2>/dev/null | head -1)" 2>/dev/null)}
if [ ! -f "$nccl_a" ] || [ ! -d .gpu/jdk-include ]; then
  pcheck "static NCCL sample built" 1 "missing $nccl_a or .gpu/jdk-include (scripts/gpu-prepare.sh)"
elif ! gcc -std=gnu11 -O2 -fPIC -DEP_STATIC -I.gpu/jdk-include -I.gpu/jdk-include/linux -pthread -shared \
    -Wl,--exclude-libs,ALL -o "$static_lib" samples/src/main/c/ep_runtime.c "$nccl_a" \
    -L"$cudart_dir" -l:libcudart.so.13 -lstdc++ -lm -ldl -lrt >>"$log" 2>&1; then
  pcheck "static NCCL sample built" 1 "gcc failed against $nccl_a (see the log)"
else
  pcheck "static NCCL sample built against $nccl_a" 0 ""
  sp=-Dncclguard.samples.ep.staticLibrary=$static_lib
  prun ep-static-leaky "report=$n/ep-static-leaky.json" NCCL_DEBUG=WARN -- "$sp" "${ep[@]}" ep-static-leaky --ranks 1
  f=$n/ep-static-leaky.json
  b=$(count '"bridge": "nccl-profiler"' "$f"); s=$(count '"dev.ncclguard.samples.ep.EpStaticRuntime.open\(Native Method\)"' "$f")
  r=$(count 'ncclguard cannot release it' "$n/ep-static-leaky.out")
  pcheck "static NCCL: the communicator reported by the plugin with the Java frame and the cannot-release line" \
    $([ "$b" -eq 1 ] && [ "$s" -ge 1 ] && [ "$r" -ge 1 ]; echo $?) "nccl-profiler leaks $b, EpStaticRuntime.open frames $s, cannot-release lines $r"
  prun ep-static-clean "report=$n/ep-static-clean.json" NCCL_DEBUG=WARN -- "$sp" "${ep[@]}" ep-static-clean --ranks 1
  f=$n/ep-static-clean.json
  pcheck "static NCCL clean: no leak" $(grep -q '"leaks": \[ \]\|"leaks": \[\]' "$f"; echo $?) "see $f"
fi

# 8. NativeHotCalls under the agent: the C loop through the PLT (the wrappers) vs the real functions,
# "added" the median of paired rounds. Twice: on stand-in libraries that return at once (what the
# agent's own work costs, to the nanosecond) and on real cudart and NCCL (the same, inside the
# noise of a real call: a cudaEventRecord is about a microsecond).
bench=${bench:-.gpu/ncclguard-bench.jar}
stub=${stub:-.gpu/stub-gpu}
hot_worst() { awk '/^(cudaEventQuery|cudaEventRecord|ncclAllReduce)/ {for (i = 1; i <= NF; i++) if ($i == "added") {v = $(i + 1); if (v > w) w = v}} END {print w + 0}' "$1"; }
if [ ! -f "$bench" ] || [ ! -f "$stub/libcudart.so.13" ]; then
  pcheck "NativeHotCalls" 1 "no $bench or $stub (scripts/gpu-prepare.sh)"
else
  prun hotcalls-stub "text=none" -- "-Dncclguard.emu=$stub" -cp "$bench" dev.ncclguard.bench.NativeHotCalls --rounds 15 --iters 2000000
  f=$n/hotcalls-stub.out
  worst=$(hot_worst "$f")
  pcheck "NativeHotCalls, stand-in libraries: <= 20 ns of the agent's own work per tracked hot call (worst ${worst:-?} ns)" \
    $(awk -v w="$worst" 'BEGIN {exit !(w != "" && w <= 20)}'; echo $?) "see $f"
  prun hotcalls "text=none" -- -cp "$bench" dev.ncclguard.bench.NativeHotCalls --rounds 15 --probes
  f=$n/hotcalls.out
  # the host's state for these figures: what 128 plain adds after a real record cost now (5-12 ns on
  # these hosts when their real calls run fast, 17-26 ns when they run 1.5-2 x slower)
  probe=$(grep '^probe: frame + 128 adds (450 B)' "$f" | sed 's/  */ /g')
  say "NativeHotCalls, real cudart, the host's state: ${probe:-?}"
  # a record of a timing event is a microsecond whose rounds spread by more than the budget: shown,
  # not judged here (the stand-in run above measures the same wrapper to a tenth of a nanosecond)
  timed=$(grep '^cudaEventRecord (timing event)' "$f" | sed 's/  */ /g')
  say "NativeHotCalls, real cudart, a record of a timing event: ${timed:-?}"
  worst=$(grep -v '(timing event)' "$f" | hot_worst /dev/stdin)
  untracked=$(awk '/^cudaGetDevice/ {for (i = 1; i <= NF; i++) if ($i == "added") print $(i + 1)}' "$f")
  create=$(awk '/^cudaEventCreate/ {for (i = 1; i <= NF; i++) if ($i == "added") print $(i + 1)}' "$f")
  pcheck "NativeHotCalls, real cudart: <= 20 ns added per tracked hot call (worst ${worst:-?} ns)" \
    $(awk -v w="$worst" 'BEGIN {exit !(w != "" && w <= 20)}'; echo $?) "see $f"
  pcheck "NativeHotCalls: untracked cudaGetDevice adds ~0 (${untracked:-?} ns, <= 2)" \
    $(awk -v w="$untracked" 'BEGIN {exit !(w != "" && w <= 2)}'; echo $?) "see $f"
  pcheck "NativeHotCalls: a creation with its Java stack <= 20 us added (${create:-?} us)" \
    $(awk -v w="$create" 'BEGIN {exit !(w != "" && w <= 20)}'; echo $?) "see $f"
  # issue 28: a create + destroy pair at a Java stack seen before <= 0.5 us; a framework's operation
  # (two fresh events, two records, an all-reduce, a query, two destroys) <= 0.5 us added on real cudart
  pcheck "NativeHotCalls: a creation pair at a repeated stack <= 0.5 us added (${create:-?} us)" \
    $(awk -v w="$create" 'BEGIN {exit !(w != "" && w <= 0.5)}'; echo $?) "see $f"
  fw=$(awk '/^framework op \(/ {for (i = 1; i <= NF; i++) if ($i == "added") print $(i + 1)}' "$f")
  ratio=$(awk '/^framework op ratio, wrapper/ {for (i = 1; i <= NF; i++) if ($i == "median") print $(i + 1)}' "$f")
  fwstub=$(awk '/^framework op \(/ {for (i = 1; i <= NF; i++) if ($i == "added") print $(i + 1)}' "$n/hotcalls-stub.out")
  say "NativeHotCalls, framework loop: real cudart ${fw:-?} us added per operation (wrapper / real ${ratio:-?}); stand-ins ${fwstub:-?} us"
  fwd=$(awk '/^framework op, default stream \(/ {for (i = 1; i <= NF; i++) if ($i == "added") print $(i + 1)}' "$f")
  ratiod=$(awk '/^framework op ratio, default stream/ {for (i = 1; i <= NF; i++) if ($i == "median") print $(i + 1)}' "$f")
  say "NativeHotCalls, framework loop on the legacy default stream (PyTorch's synchronous collectives): real cudart ${fwd:-?} us added per operation (wrapper / real ${ratiod:-?})"
  pcheck "NativeHotCalls: a framework operation on real cudart <= 0.5 us added (${fw:-?} us, ratio ${ratio:-?})" \
    $(awk -v w="$fw" 'BEGIN {exit !(w != "" && w <= 0.5)}'; echo $?) "see $f"
  # issue 28: a pair at a Java stack never seen <= 3 us (a JNI call each: no memo can serve it)
  added_of() { awk -v what="$1" 'index($0, what) == 1 {for (i = 1; i <= NF; i++) if ($i == "added") print $(i + 1)}' "$f"; }
  newstack=$(added_of "pair, a JNI call each, a new stack")
  percall=$(added_of "pair, a JNI call each, one stack")
  say "NativeHotCalls, a pair in a JNI call of its own, real cudart: at one stack ${percall:-?} us added (the walk each time), at a new stack ${newstack:-?} us"
  pcheck "NativeHotCalls: a creation pair at a new Java stack <= 3 us added (${newstack:-?} us)" \
    $(awk -v w="$newstack" 'BEGIN {exit !(w != "" && w <= 3)}'; echo $?) "see $f"
fi
say ""
part_end

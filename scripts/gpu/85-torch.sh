# A real third-party NCCL client in a JVM (issue 28): PyTorch's ProcessGroupNCCL driven from Java
# through an embedded CPython (scripts/gpu/torch: TorchClient.java, torch_jni.c), one GPU. libtorch_cuda.so
# calls NCCL (the venv's libnccl.so.2) and cudart by soname, so the agent's native part sees them.
# - probe: the embedding itself (Python without torch, from two Java threads), no agent;
# - leaky: without destroy_process_group(), both communicators (ncclCommInitRankConfig of
#   init_process_group and ncclCommSplit of new_group) reported with TorchClient.runPython(Native Method)
#   as the first Java frame;
# - clean: with destroy_process_group(), no leak;
# - cleanup: action=cleanup destroys both while PyTorch's watchdog thread still runs, NCCL_DEBUG=INFO
#   prints Destroy COMPLETE, exit 0;
# - bench: TORCH_ROUNDS (5) interleaved rounds of JVMs without and with the agent, each timing
#   TORCH_SMALL (10000) all-reduces of 1 KiB and TORCH_LARGE (300) of 4 MiB (median of TORCH_REPEATS (5)
#   timed loops, each ending in torch.cuda.synchronize()); medians per size and their ratio against
#   the issue's budget (<= 1.03x), and the median of the rounds' own ratios (each round's JVMs run
#   back to back), reported, not counted as a check. TORCH_VARIANTS adds agent settings to the
#   rounds, each NAME:OPTIONS[:ENV=V,...][:counting] (e.g. "noprof:nccl-profiler=off
#   nonative:native=off nokch:text=none:NCCLGUARD_PROF_MASK=6:counting"; counting: the counting
#   build of the native part), and
#   TORCH_CPUS pins the bench's JVMs (taskset -c), TORCH_LAUNCH_CPU=N (one of TORCH_CPUS) puts
#   each bench JVM's launching thread alone on CPU N and its other threads off N's core,
#   TORCH_AB_ROUNDS sets the in-process pairs (default 2 x TORCH_REPEATS) and TORCH_AB_DIV divides
#   their loops' all-reduces (default 1: TORCH_SMALL and TORCH_LARGE), TORCH_BENCH_ONLY=1
#   runs the bench alone (no probe, leaky, clean, cleanup, CuPy); then (unless TORCH_COUNTING=0)
#   one JVM with the counting build of the native part (.gpu/libncclguard-prof.so, make prof)
#   whose exit line says which wrapper paths the loop took and what their own work cost; then (unless TORCH_AB=0) one JVM of the
#   shipped build with a forwarding switch (.gpu/libncclguard-ab.so, make prof's ab/) alternating
#   loops with every wrapper forwarding at once and loops tracked (the ratio without the
#   JVM-to-JVM spread; the forwarding loops pay the wrappers' jump, about 1 ns a call);
#   TORCH_STEPS_LIBS and TORCH_PROF_LIBS name other builds (steps; ab or counting) for those two
#   JVMs, one JVM each: two versions of the native part compared on one host;
# - cupy-clean, cupy-leaky (issue 32, where the venv has CuPy): CuPy's NCCL binding, its stream and
#   events through its static runtime (no libcudart loaded): clean reports nothing (no false
#   unsynchronized stream), leaky its communicator, stream and event; no "no loaded library" line.
# Each check prints one "PASS: torch ..." or "FAIL: torch ..." line; everything else goes to the log,
# outputs and reports under $reports/torch. Skipped (one line) where the venv or libpython is missing.
# Needs .gpu/torch/TorchClient.class and .gpu/jdk-include (scripts/gpu-prepare.sh); the JNI library
# is compiled here with gcc. Overrides: TORCH_VENV (/opt/torch/.venv), TORCH_LIBPYTHON
# (/usr/lib/x86_64-linux-gnu/libpython3.X.so of the venv's 3.X), TORCH_PYTHONHOME (/usr),
# TORCH_TIMEOUT (300 s per JVM).
# Sourced by scripts/gpu-check.sh (part "torch"), or run alone: scripts/gpu/85-torch.sh [OUTDIR].
if [ -z "${log:-}" ]; then
  set -u
  cd "$(dirname "$0")/../.."
  out=${1:-${OUT:?usage: scripts/gpu/85-torch.sh OUTDIR (or set OUT)}}
  . scripts/gpu/lib.sh
  gpu_env "$out"
  say "# ncclguard with PyTorch in a JVM on $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
fi
part_begin torch "$reports/torch"
t=$part_dir
torch_venv=${TORCH_VENV:-/opt/torch/.venv}
torch_site=$(ls -d "$torch_venv"/lib/python3*/site-packages 2>/dev/null | head -1)
torch_py=$torch_venv/bin/python3
torch_pyver=$(basename "$(dirname "${torch_site:-/x/python3.12/x}")") # python3.12
torch_libpython=${TORCH_LIBPYTHON:-}
if [ -z "$torch_libpython" ]; then
  for c in /usr/lib/x86_64-linux-gnu/lib$torch_pyver.so /usr/lib/x86_64-linux-gnu/lib$torch_pyver.so.1.0; do
    [ -f "$c" ] && { torch_libpython=$c; break; }
  done
fi
torch_classes=${TORCH_CLASSES:-.gpu/torch}
# the counting build of the native part (make prof), and the JVM option that loads it in place of the jar's
torch_prof=$PWD/.gpu/libncclguard-prof.so
torch_prof_opt="-Dncclguard.test.native-library=$torch_prof"
# the counting build that also times the steps inside a creation, a release and a hint's miss (its
# clock reads add to them): for the counting JVM's exit lines, never for a timed comparison
torch_steps=$PWD/.gpu/libncclguard-prof-steps.so
[ -f "$torch_steps" ] || torch_steps=$torch_prof
# the in-process rounds' build: the shipped one with the forwarding switch alone (make prof's ab/),
# else the counting build (whose counters add to the tracked loops)
torch_ab=$PWD/.gpu/libncclguard-ab.so
[ -f "$torch_ab" ] || torch_ab=$torch_prof

# trun NAME AGENT_OPTIONS [ENV=V...] -- MODE [ARGS...]: one JVM running TorchClient, its output in
# $t/NAME.out and in the log (BENCH=1: the output in $t/NAME.out only); returns its exit status
trun() {
  local name=$1 opts=$2; shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local agentarg=()
  [ "$opts" != none ] && agentarg=("-javaagent:$agent=$opts")
  local cmd="\$ PYTHONHOME=$torch_pythonhome ${envs[*]} java ${agentarg[*]} TorchClient $*"
  if [ -z "${BENCH:-}" ]; then say ""; say "### torch $name"; say "$cmd"; else echo "$cmd" >>"$log"; fi
  local start end rc
  start=$(date +%s%N)
  timeout -k 10 "${TORCH_TIMEOUT:-300}" ${pin[@]+"${pin[@]}"} env PYTHONHOME="$torch_pythonhome" "${envs[@]}" \
    "$java" ${TORCH_JAVA_OPTS:-} -Xss16m "${agentarg[@]}" "-Djava.library.path=$t" -cp "$torch_classes" TorchClient "$@" \
    --libpython "$torch_libpython" --site "$torch_site" >"$t/$name.out" 2>&1
  rc=$?
  end=$(date +%s%N)
  if [ -z "${BENCH:-}" ]; then
    cat "$t/$name.out" >>"$log"
    say "exit status $rc, wall $(( (end - start) / 1000000 )) ms"
    for f in "$t/$name"*.json; do [ -f "$f" ] && { echo "--- $(basename "$f")" >>"$log"; cat "$f" >>"$log"; echo >>"$log"; }; done
  fi
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && say "(killed after ${TORCH_TIMEOUT:-300} s)"
  return $rc
}

# treport MODE FILE: checks a report with the venv's python3; prints one line (what it found),
# exit status 0 when it is what MODE wants
treport() {
  "$torch_py" - "$@" <<'EOF'
import json, sys
mode, path = sys.argv[1], sys.argv[2]
try:
    with open(path) as f:
        r = json.load(f)
except Exception as e:
    print('no report %s (%s)' % (path, e))
    sys.exit(1)
s = r.get('summary', {})
leaks = r.get('leaks', [])
comms = [l for l in leaks if l.get('kind') == 'comm']
others = {}
for l in leaks:
    if l.get('kind') != 'comm':
        others[l.get('kind')] = others.get(l.get('kind'), 0) + 1
def first(l):
    st = l.get('stack') or []
    return st[0] if st else None
want_apis = ['ncclCommInitRankConfig', 'ncclCommSplit']
apis = sorted(l.get('api') or '' for l in comms)
frames = all(first(l) == 'TorchClient.runPython(Native Method)' for l in comms)
print('%d leaked comms [%s]; other leaks: %s; created %s, released %s, cleaned %s, cleanupFailed %s' % (
    len(comms), '; '.join('%s via %s from %s, first frame %s, thread %s%s' % (
        l.get('api'), l.get('bridge'), l.get('callerLibrary', '?'), first(l), l.get('thread'),
        ', cleanup ' + l['cleanup'] if 'cleanup' in l else '') for l in comms),
    ', '.join('%d %s' % (n, k) for k, n in sorted(others.items())) or 'none',
    s.get('commsCreated'), s.get('commsReleased'), s.get('cleaned'), s.get('cleanupFailed')))
if mode == 'leaky':
    ok = len(comms) == 2 and apis == want_apis and frames
elif mode == 'clean':
    ok = not leaks and (s.get('commsCreated') or 0) >= 2 and s.get('commsCreated') == s.get('commsReleased')
elif mode == 'cleanup':
    ok = (len(comms) == 2 and apis == want_apis and frames and s.get('cleanupFailed') == 0
          and all(l.get('cleanup') == 'destroyed' for l in comms))
else:
    ok = False
sys.exit(0 if ok else 1)
EOF
}

# terr NAME: the last error line of $t/NAME.out (a Python exception, a fatal JVM error), for the FAIL lines
terr() {
  local e
  e=$(grep -E 'Error|Exception|error:|FATAL|SIGSEGV|terminate called|Aborted' "$t/$1.out" 2>/dev/null | tail -1 | cut -c1-300)
  [ -n "$e" ] && echo "; last error in $1.out: $e"
}

# tmedian VARIANT SIZE FILE: the median us/op of VARIANT's rounds for SIZE (lines "variant size us")
tmedian() {
  awk -v v="$1" -v s="$2" '$1 == v && $2 == s {print $3}' "$3" | sort -g |
    awk '{a[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

torch_pythonhome=${TORCH_PYTHONHOME:-/usr}
if [ -z "$torch_site" ] || [ ! -x "$torch_py" ] || [ -z "$torch_libpython" ] || [ ! -f "$torch_libpython" ]; then
  say "SKIP: torch: needs a venv with torch ($torch_venv: site-packages ${torch_site:-missing}) and its libpython (${torch_libpython:-no /usr/lib/x86_64-linux-gnu/lib$torch_pyver.so})"
elif [ ! -f "$torch_classes/TorchClient.class" ] || [ ! -d .gpu/jdk-include ]; then
  pcheck "client built" 1 "missing $torch_classes/TorchClient.class or .gpu/jdk-include (scripts/gpu-prepare.sh)"
elif ! gcc -std=gnu11 -O2 -Wall -fPIC -shared -I.gpu/jdk-include -I.gpu/jdk-include/linux \
    -o "$t/libtorchclient.so" scripts/gpu/torch/torch_jni.c -ldl -lpthread >>"$log" 2>&1; then
  pcheck "client built" 1 "gcc failed on scripts/gpu/torch/torch_jni.c (see the log)"
else
  say "torch: venv $torch_venv ($torch_site), libpython $torch_libpython, PYTHONHOME $torch_pythonhome"
  "$torch_py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())))' 2>&1 | tee -a "$log"

  if [ -z "${TORCH_BENCH_ONLY:-}" ]; then
  # 1. the embedding: Python from the Java main thread, from a second Java thread, then main again
  trun probe none -- probe
  rc=$?
  p=$(grep -c '^TORCHCLIENT probe python=' "$t/probe.out")
  pcheck "embedded CPython runs from two Java threads" $([ "$rc" -eq 0 ] && [ "$p" -eq 3 ]; echo $?) \
    "exit status $rc, $p of 3 probe lines (see $t/probe.out)"

  # 2. leaky: both communicators reported with the Java frame that entered the JNI library
  trun leaky "report=$t/leaky.json" NCCL_DEBUG=WARN -- leaky
  rc=$?
  found=$(treport leaky "$t/leaky.json"); ok=$?
  say "leaky: $(sed -n 's/^TORCHCLIENT \(torch=.*\) thread=.*/\1/p' "$t/leaky.out"), libraries $(sed -n 's/^TORCHCLIENT libraries: //p' "$t/leaky.out")"
  say "leaky: $found"
  pcheck "leaky: ncclCommInitRankConfig and ncclCommSplit reported, first frame TorchClient.runPython(Native Method)" \
    $([ "$ok" -eq 0 ] && grep -q '^TORCHCLIENT done mode=leaky' "$t/leaky.out"; echo $?) "exit status $rc; $found$(terr leaky)"

  # 3. clean: destroy_process_group() releases both, nothing reported
  trun clean "report=$t/clean.json" NCCL_DEBUG=WARN -- clean
  rc=$?
  found=$(treport clean "$t/clean.json"); ok=$?
  say "clean: $found"
  pcheck "clean: no leak after destroy_process_group(), exit 0" $([ "$ok" -eq 0 ] && [ "$rc" -eq 0 ]; echo $?) \
    "exit status $rc; $found$(terr clean)"

  # 4. cleanup: the agent destroys both while ProcessGroupNCCL's watchdog still runs
  trun cleanup "action=cleanup,report=$t/cleanup.json" NCCL_DEBUG=INFO -- leaky
  rc=$?
  found=$(treport cleanup "$t/cleanup.json"); ok=$?
  d=$(grep -c 'Destroy COMPLETE' "$t/cleanup.out")
  w=$(sed -n 's/^TORCHCLIENT threads at return: //p' "$t/cleanup.out")
  say "cleanup: $found; NCCL Destroy COMPLETE lines $d; torch threads as the Java method returned: ${w:-none seen}"
  pcheck "cleanup: both destroyed by the agent with the watchdog running, NCCL's Destroy COMPLETE, exit 0" \
    $([ "$ok" -eq 0 ] && [ "$d" -ge 2 ] && [ "$rc" -eq 0 ]; echo $?) "exit status $rc, Destroy COMPLETE lines $d (want 2); $found$(terr cleanup)"

  # 6. CuPy's NCCL binding (issue 32): no libcudart loaded, its stream and events reach libcuda.so.1
  #    through its static runtime's cuGetProcAddress. clean: no leak, no false unsynchronized stream,
  #    no line about a call no library defines; leaky: the communicator, the stream and the event.
  if "$torch_py" -c 'import cupy' >/dev/null 2>&1; then
    for mode in clean leaky; do
      trun "cupy-$mode" "report=$t/cupy-$mode.json" NCCL_DEBUG=WARN -- "cupy-$mode"
      rc=$?
      found=$("$torch_py" - "$mode" "$t/cupy-$mode.json" <<'EOF2'
import json, sys
mode, path = sys.argv[1], sys.argv[2]
try:
    with open(path) as f:
        r = json.load(f)
except Exception as e:
    print('no report %s (%s)' % (path, e))
    sys.exit(1)
leaks = r.get('leaks', [])
kinds = sorted(l.get('kind') for l in leaks)
print('leaks: %s' % ('; '.join('%s %s via %s from %s' % (l.get('kind'), l.get('api'), l.get('bridge'),
      l.get('callerLibrary', '?')) for l in leaks) or 'none'))
if mode == 'clean':
    sys.exit(0 if not leaks else 1)
sys.exit(0 if 'comm' in kinds and 'event' in kinds and 'stream' in kinds else 1)
EOF2
      ); ok=$?
      nolib=$(grep -c 'was called but no loaded' "$t/cupy-$mode.out")
      say "cupy-$mode: $(sed -n 's/^CUPYCLIENT \(cupy=.*\)/\1/p' "$t/cupy-$mode.out" | head -1); $found; 'no loaded library' lines $nolib"
      pcheck "CuPy $mode: $([ "$mode" = clean ] && echo 'no leak, no false unsynchronized stream' || echo 'its communicator, stream and event reported')" \
        $([ "$ok" -eq 0 ] && [ "$rc" -eq 0 ] && [ "$nolib" -eq 0 ] && grep -q "^CUPYCLIENT done mode=cupy-$mode" "$t/cupy-$mode.out"; echo $?) \
        "exit status $rc, 'no loaded library' lines $nolib; $found$(terr "cupy-$mode")"
    done
  else
    say "SKIP: CuPy: not importable in $torch_venv"
  fi
  fi

  # 5. bench: interleaved rounds, the variants' order turns by one every round
  tsv=$t/bench.tsv cpu=$t/bench-cpu.tsv
  : >"$tsv"; : >"$cpu"
  # TORCH_CPUS: the JVMs run under taskset -c TORCH_CPUS (a process's threads wander less between rounds)
  pin=()
  [ -n "${TORCH_CPUS:-}" ] && pin=(taskset -c "$TORCH_CPUS")
  launch=${TORCH_LAUNCH_CPU:+TORCHCLIENT_LAUNCH_CPU=$TORCH_LAUNCH_CPU}
  nvidia-smi topo -m >>"$log" 2>&1
  variants="without with"
  for v in ${TORCH_VARIANTS:-}; do variants="$variants ${v%%:*}"; done
  nvariants=$(echo $variants | wc -w)
  say ""
  say "### torch bench: ${TORCH_ROUNDS:-5} rounds x {$variants}, ${TORCH_SMALL:-10000} x 1 KiB and ${TORCH_LARGE:-300} x 4 MiB all-reduces per JVM"
  [ -n "${TORCH_VARIANTS:-}" ] && say "variants: without (no agent), with (the defaults) ${TORCH_VARIANTS}"
  for round in $(seq 1 "${TORCH_ROUNDS:-5}"); do
    turn=$(( (round - 1) % nvariants ))
    order=$(echo $variants | tr ' ' '\n' | awk -v k="$turn" -v n="$nvariants" '{a[NR - 1] = $0} END {for (i = 0; i < n; i++) print a[(i + k) % n]}')
    for variant in $order; do
      opts="report=$t/bench-$round-$variant.json" venv="" vjava=""
      [ "$variant" = without ] && opts=none
      for v in ${TORCH_VARIANTS:-}; do
        IFS=: read -r vname vopts venvs vbuild <<<"$v"
        [ "$vname" = "$variant" ] || continue
        opts="$vopts,report=$t/bench-$round-$variant.json"
        venv=${venvs//,/ }
        [ "$vbuild" = counting ] && vjava=$torch_prof_opt
      done
      BENCH=1 TORCH_JAVA_OPTS="$vjava" trun "bench-$round-$variant" "$opts" NCCL_DEBUG=WARN $venv $launch -- bench \
        --small "${TORCH_SMALL:-10000}" --large "${TORCH_LARGE:-300}" --repeats "${TORCH_REPEATS:-5}"
      rc=$?
      lines=$(sed -n 's/^TORCHBENCH size=\([^ ]*\) .* us_per_op=\([0-9.]*\) repeats=\(.*\)/\1 \2 (\3)/p' "$t/bench-$round-$variant.out")
      if [ "$rc" -ne 0 ] || [ -z "$lines" ]; then
        say "round $round $variant: FAILED, exit status $rc$(terr "bench-$round-$variant") (output in the log)"
        cat "$t/bench-$round-$variant.out" >>"$log"
      else
        say "round $round $variant: $(echo "$lines" | sed 's/\([^ ]*\) \([^ ]*\) /\1 \2 us\/op /' | paste -sd';' | sed 's/;/; /g')"
        echo "$lines" | awk -v v="$variant" -v r="$round" '{print v, $1, $2, r}' >>"$tsv"
        sed -n 's/^TORCHBENCH size=\([^ ]*\) .*cpu_us_per_op=\([0-9.]*\) .*/\1 \2/p' "$t/bench-$round-$variant.out" |
          awk -v v="$variant" -v r="$round" '{print v, $1, $2, r}' >>"$cpu"
      fi
    done
  done
  for size in 1KiB 4MiB; do
    mw=$(tmedian without "$size" "$tsv")
    for variant in $variants; do
      [ "$variant" = without ] && continue
      mg=$(tmedian "$variant" "$size" "$tsv")
      ratio=$(awk -v a="$mg" -v b="$mw" 'BEGIN {if (b > 0 && a > 0) printf "%.4f", a / b; else print "nan"}')
      # each round's ratio (its JVMs ran back to back), then their median
      paired=$(awk -v v="$variant" -v s="$size" '$2 == s && $1 == "without" {w[$4] = $3} $2 == s && $1 == v {g[$4] = $3}
        END {for (r in g) if (w[r] > 0) print "x", s, g[r] / w[r]}' "$tsv" >"$t/paired-$size.tsv"; tmedian x "$size" "$t/paired-$size.tsv")
      verdict=$(awk -v r="$ratio" 'BEGIN {if (r == "nan") print "no figure"; else if (r <= 1.03) print "within the budget"; else print "OVER the budget"}')
      say "torch all-reduce $size, one rank: median us/op without the agent $mw, $variant $mg, ratio $ratio, median of the rounds' ratios $(printf '%.4f' "$paired" 2>/dev/null || echo nan) (budget <= 1.03x): $verdict"
      cw=$(tmedian without "$size" "$cpu"); cg=$(tmedian "$variant" "$size" "$cpu")
      say "  the launching thread's CPU us/op: without $cw, $variant $cg, added $(awk -v a="$cg" -v b="$cw" 'BEGIN {printf "%.3f", a - b}') us"
    done
  done
  # where the agent's time goes: the counting build, its exit lines (calls per wrapper and path, the
  # generic path's cycles, upcalls, the stack memo)
  # TORCH_STEPS_LIBS / TORCH_PROF_LIBS: other counting builds (paths), one JVM each, to compare
  # two versions of the native part step by step and in process on one host
  if [ -f "$torch_prof" ] && [ "${TORCH_COUNTING:-1}" != 0 ]; then
    for lib in ${TORCH_STEPS_LIBS:-$torch_steps}; do
      BENCH=1 TORCH_JAVA_OPTS="-Dncclguard.test.native-library=$lib" trun bench-counting "text=none" \
        NCCL_DEBUG=WARN NCCLGUARD_NATIVE_DEBUG=1 -- bench --small "${TORCH_SMALL:-10000}" --large "${TORCH_LARGE:-300}" --repeats "${TORCH_REPEATS:-5}"
      say "counting build ($(basename "$lib")): $(grep -h '^TORCHBENCH' "$t/bench-counting.out" | sed 's/.*size=\([^ ]*\) .*us_per_op=\([0-9.]*\) .*/\1 \2 us\/op/' | paste -sd ' ')"
      grep -h 'ncclguard: native: \(debug\|profile\)' "$t/bench-counting.out" | tee -a "$log"
    done
  fi
  # in one process, without the JVM-to-JVM spread: the counting build's loops with every wrapper
  # forwarding at once against loops tracked, alternated (TorchClient's TORCHAB lines)
  if [ -f "$torch_ab" ] && [ "${TORCH_AB:-1}" != 0 ]; then
    for lib in ${TORCH_PROF_LIBS:-$torch_ab}; do
      BENCH=1 TORCH_JAVA_OPTS="-Dncclguard.test.native-library=$lib" trun bench-inprocess "text=none" \
        NCCL_DEBUG=WARN TORCHCLIENT_PROF_LIB="$lib" $launch ${TORCH_AB_ROUNDS:+TORCHCLIENT_AB_ROUNDS=$TORCH_AB_ROUNDS} \
        ${TORCH_AB_DIV:+TORCHCLIENT_AB_DIV=$TORCH_AB_DIV} -- bench --small "${TORCH_SMALL:-10000}" \
        --large "${TORCH_LARGE:-300}" --repeats "${TORCH_REPEATS:-5}"
      ab=$(sed -n 's/^TORCHAB //p' "$t/bench-inprocess.out")
      if [ -z "$ab" ]; then
        say "in-process rounds ($(basename "$lib")): no TORCHAB line$(terr bench-inprocess) (output in $t/bench-inprocess.out)"
      else
        echo "$ab" | while read -r line; do say "in-process rounds ($(basename "$lib"), forwarding / tracked, alternated in one JVM): $line"; done
      fi
    done
  fi
fi
say ""
part_end

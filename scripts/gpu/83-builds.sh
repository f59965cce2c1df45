# Builds of libncclguard.so compared on one host: NativeHotCalls under the agent with each build
# loaded through -Dncclguard.test.native-library, on the stand-in libraries and on real cudart, with
# the CPU's counters where the host has them (COUNTERS=1: --counters). Hosts of one kind differ by up to 2x from one lease to the next,
# so only builds measured in the same run are compared; the builds take turns, PASSES times.
# Run only when named: scripts/gpu-check.sh OUTDIR builds, with BUILDS="name=path ..." (paths under
# .gpu/, which travels; default: the agent jar's own build) and PASSES (default 2). Each pass ends
# with NativeHotCalls' probes (--probes: what a real record's footprint does to work after it,
# without the agent's code), on both sides.
n=$reports/builds
mkdir -p "$n"
bench=${bench:-.gpu/ncclguard-bench.jar}
stub=${stub:-.gpu/stub-gpu}
say "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
say "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown); perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo unknown)"
for pass in $(seq 1 "${PASSES:-2}"); do
  for b in ${BUILDS:-jar=}; do
    name=${b%%=*} lib=${b#*=}
    prop=()
    [ -n "$lib" ] && prop=("-Dncclguard.test.native-library=$lib")
    for side in stub real; do
      emu=()
      [ $side = stub ] && emu=("-Dncclguard.emu=$stub")
      f=$n/$name-$side-$pass.out
      say ""
      say "### builds: $name, $side, pass $pass"
      "$java" "-javaagent:$agent=text=none" "${prop[@]}" "${emu[@]}" -cp "$bench" dev.ncclguard.bench.NativeHotCalls \
        --rounds "${ROUNDS:-9}" --iters "${ITERS:-1000000}" ${COUNTERS:+--counters} >"$f" 2>&1
      say "exit status $?"
      cat "$f" >>"$log"
      grep -E '^(cudaEvent|ncclAllReduce|cudaGetDevice|NativeHotCalls)' "$f"
    done
  done
  for side in stub real; do
    emu=()
    [ $side = stub ] && emu=("-Dncclguard.emu=$stub")
    f=$n/probes-$side-$pass.out
    say ""
    say "### builds: probes, $side, pass $pass"
    "$java" "${emu[@]}" -cp "$bench" dev.ncclguard.bench.NativeHotCalls --rounds "${ROUNDS:-9}" --iters "${ITERS:-1000000}" --probes >"$f" 2>&1
    say "exit status $?"
    cat "$f" >>"$log"
    grep -E '^(cudaEventRecord |probe)' "$f"
  done
done

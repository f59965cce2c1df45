# The CPU part of the benchmarks (docs/performance.md) on this machine's idle cores, on the emulator
# built here with its gcc: a quiet machine resolves the few percent that the loaded 2-core
# development machine cannot. About 5 minutes; 71-cpu-compare.sh has the JMH forks with and
# without the agent (as long again). Run them alone: scripts/gpu-check.sh OUT cpu cpu-compare.
# Results in OUT/reports/cpu/*.md and the log.
if cpu_setup; then
  say ""
  say "### TrackingOnOff: whole JNA calls, tracking on and off in alternating 50 ms blocks, 3 runs of 40 pairs"
  for i in 1 2 3; do
    "$java" "-javaagent:$agent=text=none,stacks=off" -Dncclguard.emu="$emu" -cp "$bench" \
      dev.ncclguard.bench.TrackingOnOff 40 50 2>&1 | tee -a "$log"
  done
  say ""
  say "### JMH AgentPath and NativeBridgePath: the agent's own work per call (CPU ns), stacks=off, 2 forks"
  "$java" -cp "$bench:$agent" org.openjdk.jmh.Main 'AgentPath|NativeBridgePath' -p stacks=off -f 2 -wi 2 -w 1s -i 2 -r 1s \
    -prof gc -prof dev.ncclguard.bench.CpuTimeProfiler -rf text -rff "$cpu_out/agent-path.txt" >>"$log" 2>&1 \
    && tee -a "$log" <"$cpu_out/agent-path.txt" || say "FAILED: JMH (see the log)"
  say ""
  say "### ProcessBench startup, 20 runs each, alternating"
  "$java" -cp "$bench" dev.ncclguard.bench.ProcessBench startup --agent "$agent" --emu "$emu" --samples "$samples" \
    --runs 20 --out "$cpu_out" 2>&1 | tee -a "$log"
  say ""
  say "### ProcessBench exit, 100,000 leaked events, 5 runs"
  "$java" -cp "$bench" dev.ncclguard.bench.ProcessBench exit --agent "$agent" --emu "$emu" --handles 100000 \
    --runs 5 --out "$cpu_out" 2>&1 | tee -a "$log"
fi

# The CPU part of the benchmarks (docs/performance.md) on this machine's idle cores, on the emulator
# built here with its gcc: a quiet machine resolves the few percent that the loaded 2-core
# development machine cannot: whole JNA calls with tracking on and off, and the agent's own work per
# call. About 3 minutes; 71-cpu-compare.sh has the JMH forks with and without the agent (5 minutes),
# 72-cpu-process.sh start-up and exit (2 minutes). Run them alone: scripts/gpu-check.sh OUT cpu.
# Results in OUT/reports/cpu/*.md and the log.
if cpu_setup; then
  say ""
  say "### TrackingOnOff: whole JNA calls, tracking on and off in alternating 50 ms blocks, 3 runs of 40 pairs"
  for i in 1 2 3; do
    "$java" "-javaagent:$agent=text=none,stacks=off" "-javaagent:$bench" -Dncclguard.emu="$emu" -cp "$bench" \
      dev.ncclguard.bench.TrackingOnOff 40 50 2>&1 | tee -a "$log"
  done
  say ""
  say "### JMH AgentPath and NativeBridgePath: the agent's own work per call (CPU ns), stacks=off, 2 forks"
  "$java" -cp "$bench:$agent_classes" org.openjdk.jmh.Main 'AgentPath|NativeBridgePath' -p stacks=off -f 2 -wi 2 -w 1s -i 2 -r 1s \
    -jvmArgsAppend "-Dncclguard.emu=$emu" -foe true \
    -prof gc -prof dev.ncclguard.bench.CpuTimeProfiler -rf text -rff "$cpu_out/agent-path.txt" >>"$log" 2>&1 \
    && tee -a "$log" <"$cpu_out/agent-path.txt" || say "FAILED: JMH (see the log)"
fi

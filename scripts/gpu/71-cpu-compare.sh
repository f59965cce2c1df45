# Whole calls with and without the agent on this machine's idle cores (JMH Compare, see 70-cpu.sh):
# JNA interface mapping (tracked and untracked) and JNI / JNA direct, 2 rounds. About 5 minutes.
if cpu_setup; then
  say ""
  say "### Compare: JnaInterfaceCalls (hot) and NativeMethodCalls (native), 2 rounds, 2 x 1 s warmup, 3 x 1 s"
  "$java" -cp "$bench" dev.ncclguard.bench.Compare --agent "$agent" --emu "$emu" --out "$cpu_out" \
    --suite hot,native --rounds 2 --warmup 2 --iterations 3 \
    --benchmarks 'cudaEventQuery|cudaEventRecord|ncclAllReduce|cudaGetDevice|(direct|jni)(EventQuery|EventRecord|AllReduce|GetDevice\w*)' \
    >>"$log" 2>&1 && tee -a "$log" <"$cpu_out/jmh-summary.md" || say "FAILED: Compare (see the log)"
fi

#!/usr/bin/env bash
# What the agent costs, on the CPU, in one command (method and results: docs/performance.md).
# Builds the agent, the samples and bench/, then runs, each against the same thing without the
# agent, on the emulator (emulator/target/emu):
#   jmh         JNA interface calls, tracked and untracked, and creations (bench Compare)
#   agent-path  the agent's own work per call, without JNA or the native call (JMH AgentPath), and
#               the native-method bridge's next to the tracker's alone (JMH NativeBridgePath)
#   onoff       whole JNA calls, tracking on and off in alternating blocks of one JVM (TrackingOnOff)
#   creations   creation pairs through JNA interface, JNA direct and JNI: unplugged, stacks=off, stacks=on (CreationsOnOff)
#   startup     JVM start to exit of a sample that loads JNA (hyperfine if installed, startup-paired.py, ProcessBench)
#   exit        exit with 100,000 leaked events: until the reports are written
#   memory      heap per live handle, stacks=off
# Usage: scripts/bench.sh [--quick] [PART...]   (--quick: 1 round, shorter runs, a smoke test;
# BENCH_ROUNDS, BENCH_WARMUP, BENCH_ITERATIONS: JMH rounds and 1 s iterations per fork, default 3, 5, 5)
# Results: bench/target/results/*.md (and the raw JMH logs and CSV beside them).
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
parts=()
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    jmh|agent-path|onoff|creations|startup|exit|memory) parts+=("$a") ;;
    *) echo "usage: scripts/bench.sh [--quick] [jmh|agent-path|onoff|creations|startup|exit|memory]..." >&2; exit 2 ;;
  esac
done
[ ${#parts[@]} -eq 0 ] && parts=(jmh agent-path onoff startup exit memory)

mvn -B -q -pl agent,samples,bench -am package -DskipTests
emu=emulator/target/emu
agent=agent/target/ncclguard-agent.jar
# the agent's classes in the ordinary layout, for the benchmarks that call them directly
agent_classes=agent/target/ncclguard-agent-classes.jar
samples=samples/target/ncclguard-samples.jar
benchjar=bench/target/ncclguard-bench.jar
out=bench/target/results
if [ ! -f "$emu/libnccl.so.2" ]; then
  echo "bench: no emulator in $emu (build the emulator module)" >&2
  exit 1
fi
mkdir -p "$out"
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load $(cut -d' ' -f1-3 /proc/loadavg)"
  java -version 2>&1 | head -2
} >"$out/machine.txt"
cat "$out/machine.txt"

if [ $quick = 1 ]; then
  rounds=1 warmup=2 iterations=2 runs=3 handles=20000 procruns=1 pairs=5
else
  rounds=${BENCH_ROUNDS:-3} warmup=${BENCH_WARMUP:-5} iterations=${BENCH_ITERATIONS:-5} runs=15 handles=100000 procruns=3 pairs=40
fi
run_java() { java -cp "$benchjar" "$@"; }

for part in "${parts[@]}"; do
  echo
  echo "== $part"
  case $part in
    jmh)
      run_java dev.ncclguard.bench.Compare --agent "$agent" --emu "$emu" --out "$out" \
        --rounds "$rounds" --warmup "$warmup" --iterations "$iterations"
      ;;
    agent-path)
      java -cp "$benchjar:$agent_classes" org.openjdk.jmh.Main AgentPath NativeBridgePath -f "$rounds" -wi "$warmup" -w 1s \
        -i "$iterations" -r 1s -prof gc -prof dev.ncclguard.bench.CpuTimeProfiler \
        -jvmArgsAppend "-Dncclguard.emu=$emu" -o "$out/agent-path.log" -rf text -rff "$out/agent-path.txt"
      grep -v 'gc.count\|gc.time\|alloc.rate ' "$out/agent-path.txt"
      ;;
    onoff)
      for r in $(seq 1 "$rounds"); do
        java -javaagent:"$agent"=text=none,stacks=off -javaagent:"$benchjar" -Dncclguard.emu="$emu" -cp "$benchjar" \
          dev.ncclguard.bench.TrackingOnOff "$pairs" 50
      done | tee "$out/onoff.md"
      ;;
    creations)
      java -javaagent:"$agent"=text=none -javaagent:"$benchjar" -Dncclguard.emu="$emu" -cp "$benchjar" \
        dev.ncclguard.bench.CreationsOnOff "$pairs" 30 | tee "$out/creations.md"
      ;;
    startup)
      if command -v hyperfine >/dev/null; then
        # -N: no shell around each run, whose start would only add noise
        echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/startup-load.txt"
        hyperfine -N --warmup 2 --runs "$runs" --export-json "$out/startup-hyperfine.json" \
          --export-markdown "$out/startup-hyperfine.md" \
          -n without "java -Dncclguard.emu=$emu -jar $samples clean --ranks 1 --iters 1" \
          -n with "java -javaagent:$agent -Dncclguard.emu=$emu -jar $samples clean --ranks 1 --iters 1"
        echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/startup-load.txt"
        grep -o '"command": "[a-z]*"\|"median": [0-9.]*' "$out/startup-hyperfine.json" | paste - - | tee "$out/startup-medians.txt"
      else
        echo "hyperfine not installed (apt-get install hyperfine): ProcessBench alone"
      fi
      # CPU time next to wall time, paired by round: what the agent adds without the waits for a core
      scripts/startup-paired.py "$runs" "without=java -Dncclguard.emu=$emu -jar $samples clean --ranks 1 --iters 1" \
        "with=java -javaagent:$agent -Dncclguard.emu=$emu -jar $samples clean --ranks 1 --iters 1" \
        | tee "$out/startup-paired.md"
      run_java dev.ncclguard.bench.ProcessBench startup --agent "$agent" --emu "$emu" --samples "$samples" \
        --runs "$runs" --out "$out"
      ;;
    exit)
      run_java dev.ncclguard.bench.ProcessBench exit --agent "$agent" --emu "$emu" --handles "$handles" \
        --runs "$procruns" --out "$out"
      ;;
    memory)
      run_java dev.ncclguard.bench.ProcessBench memory --agent "$agent" --emu "$emu" --handles "$handles" \
        --runs "$procruns" --out "$out"
      ;;
  esac
done

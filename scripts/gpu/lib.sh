# Shared by scripts/gpu/*.sh, sourced by scripts/gpu-check.sh: where things are, and `run`.
java=.gpu/jre/bin/java
agent=.gpu/ncclguard-agent.jar
# the agent's classes in the ordinary layout, for benchmarks that call them directly (the agent jar keeps them to its own loader)
agent_classes=.gpu/ncclguard-agent-classes.jar
samples=.gpu/ncclguard-samples.jar

say() { echo "$@" | tee -a "$log"; }

# gpu_env OUTDIR: what every run writes to and runs with: OUTDIR/gpu-check.log ($log),
# OUTDIR/reports ($reports), NVLS off, and the CUDA runtime (not on the loader's default path there).
gpu_env() {
  out=$1
  mkdir -p "$out/reports"
  log="$out/gpu-check.log"
  reports="$out/reports"
  export NCCL_NVLS_ENABLE=0
  local d
  for d in /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13.0/targets/x86_64-linux/lib; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && break
  done
}

# run NAME AGENT_OPTIONS [ENV=VALUE...] -- SAMPLE_ARGS...
# Runs the samples jar (AGENT_OPTIONS "none": without the agent), logs its output, exit status and
# wall time, then the JSON reports named "$reports/NAME*.json".
run() {
  local name=$1 opts=$2; shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  # GPU_RANKS: ranks per sample on a machine with fewer GPUs than the samples' default of 2
  [ -n "${GPU_RANKS:-}" ] && set -- "$@" --ranks "$GPU_RANKS"
  local agentarg=()
  [ "$opts" != "none" ] && agentarg=("-javaagent:$agent=$opts")
  say ""
  say "### $name"
  say "\$ ${envs[*]} java ${agentarg[*]} -jar ncclguard-samples.jar $*"
  local start end rc
  start=$(date +%s%N)
  env "${envs[@]}" "$java" "${agentarg[@]}" -jar "$samples" "$@" >>"$log" 2>&1
  rc=$?
  end=$(date +%s%N)
  say "exit status $rc, wall $(( (end - start) / 1000000 )) ms"
  for f in "$reports/$name"*.json; do
    [ -f "$f" ] && { say "--- $(basename "$f")"; cat "$f" >>"$log"; echo >>"$log"; }
  done
}

# java_at_least N: whether the runtime that travelled is Java N or later (FFM needs 22).
java_at_least() {
  [ "$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')" -ge "$1" ] 2>/dev/null
}

# has_javacpp: whether scripts/gpu-prepare.sh put JavaCPP's presets (org.bytedeco:cuda) in .gpu/javacpp.
has_javacpp() {
  ls .gpu/javacpp/*.jar >/dev/null 2>&1
}

# run_javacpp NAME OPTIONS SCENARIO
# Runs SCENARIO on JavaCPP's presets (the samples jar and .gpu/javacpp/*.jar on the class path, no
# -jar) with the agent's OPTIONS, which end in "report": the report is "$reports/NAME.json". Logs
# like run: the command, output, exit status, wall time, then the report.
run_javacpp() {
  local name=$1 opts=$2 scenario=$3
  local jcp start end rc
  jcp=$samples$(printf ':%s' .gpu/javacpp/*.jar)
  say ""
  say "### $name"
  say "\$ java -javaagent:$agent=$opts=$reports/$name.json -cp ncclguard-samples.jar:javacpp/*.jar dev.ncclguard.samples.Samples $scenario --bridge javacpp"
  start=$(date +%s%N)
  NCCL_DEBUG=WARN "$java" "-javaagent:$agent=$opts=$reports/$name.json" -Dorg.bytedeco.javacpp.cachedir=/tmp/ncclguard-javacpp-cache \
    -cp "$jcp" dev.ncclguard.samples.Samples "$scenario" --bridge javacpp >>"$log" 2>&1
  rc=$?
  end=$(date +%s%N)
  say "exit status $rc, wall $(( (end - start) / 1000000 )) ms"
  [ -f "$reports/$name.json" ] && { say "--- $name.json"; cat "$reports/$name.json" >>"$log"; echo >>"$log"; }
}

# cpu_setup: for the CPU parts (70-, 71-): sets cpu_out and emu, builds the emulator there with
# this machine's gcc; fails with a line in the log when the bench jar or the build is missing.
cpu_setup() {
  bench=${bench:-.gpu/ncclguard-bench.jar}
  mkdir -p "$reports/cpu"
  cpu_out=$(cd "$reports/cpu" && pwd)
  emu="$cpu_out/emu-build/emu"
  if [ ! -f "$bench" ]; then
    say "SKIP: no $bench (run scripts/gpu-prepare.sh)"
    return 1
  fi
  if [ ! -f "$emu/libnccl.so.2" ] && ! make -s -C emulator/src/main/c OUT="$cpu_out/emu-build" ABI="$PWD/abi" all >>"$log" 2>&1; then
    say "FAILED: the emulator did not build here (see the log)"
    return 1
  fi
  say "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
}

# part_begin LABEL DIR: a part of checks (80-native, 84-never-changes, 85-torch): pcheck lines say
# "PASS: LABEL ..." or "FAIL: LABEL ...: WHY" and are counted; prun writes its JVMs' outputs under DIR.
part_begin() {
  part=$1 part_dir=$2 part_pass=0 part_fail=0
  mkdir -p "$part_dir"
}
# pcheck NAME CONDITION-RESULT(0/1) WHY
pcheck() {
  if [ "$2" -eq 0 ]; then say "PASS: $part $1"; part_pass=$((part_pass + 1))
  else say "FAIL: $part $1: $3"; part_fail=$((part_fail + 1)); fi
}
# part_end: the part's count line
part_end() {
  say "$part: $part_pass passed, $part_fail failed (logs and reports under $part_dir)"
}
# prun NAME AGENT_OPTIONS [ENV=V...] -- JAVA_ARGS...: one JVM, its output in $part_dir/NAME.out and
# the log, then its reports $part_dir/NAME*.json in the log; AGENT_OPTIONS "none": without the
# agent. Returns the JVM's exit status.
prun() {
  local name=$1 opts=$2; shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local agentarg=()
  [ "$opts" != none ] && agentarg=("-javaagent:$agent=$opts")
  say ""
  say "### $part $name"
  say "\$ ${envs[*]} java ${agentarg[*]} $*"
  env "${envs[@]}" "$java" "${agentarg[@]}" "$@" >"$part_dir/$name.out" 2>&1
  local rc=$?
  cat "$part_dir/$name.out" >>"$log"
  say "exit status $rc"
  for f in "$part_dir/$name"*.json; do [ -f "$f" ] && { echo "--- $(basename "$f")" >>"$log"; cat "$f" >>"$log"; echo >>"$log"; }; done
  return $rc
}
# no_leak REPORT: whether the JSON report lists no leak
no_leak() { grep -q '"leaks": \[ \]\|"leaks": \[\]' "$1" 2>/dev/null; }

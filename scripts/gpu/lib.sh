# Shared by scripts/gpu/*.sh, sourced by scripts/gpu-check.sh: where things are, and `run`.
java=.gpu/jre/bin/java
agent=.gpu/ncclguard-agent.jar
samples=.gpu/ncclguard-samples.jar

say() { echo "$@" | tee -a "$log"; }

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

#!/usr/bin/env bash
# The whole GPU check in one call, on a machine with real NCCL and CUDA (see docs/gpu-results.md).
# Needs .gpu/ from scripts/gpu-prepare.sh. Usage: scripts/gpu-check.sh OUTDIR
# Writes OUTDIR/gpu-check.log (everything printed, with each report) and OUTDIR/reports.tar.gz.
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu-check.sh OUTDIR}
mkdir -p "$out/reports"
log="$out/gpu-check.log"
java=.gpu/jre/bin/java
agent=.gpu/ncclguard-agent.jar
samples=.gpu/ncclguard-samples.jar
export NCCL_NVLS_ENABLE=0
# the CUDA runtime is not on the loader's default path there
for d in /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13.0/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && break
done

say() { echo "$@" | tee -a "$log"; }

# run NAME AGENT_OPTIONS ENV... -- SAMPLE_ARGS...
run() {
  local name=$1 opts=$2; shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
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
  for f in "$out"/reports/"$name"*.json; do
    [ -f "$f" ] && { say "--- $(basename "$f")"; cat "$f" >>"$log"; echo >>"$log"; }
  done
}

say "# ncclguard GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi -L 2>&1 | tee -a "$log"
nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1 | head -1 | sed 's/^/driver /' | tee -a "$log"
ls -l /usr/lib/x86_64-linux-gnu/libnccl.so.2* 2>&1 | tee -a "$log"
"$java" -version 2>&1 | tee -a "$log"

r="$out/reports"
run clean "report=$r/clean.json" NCCL_DEBUG=WARN -- clean
run leaky "report=$r/leaky.json" NCCL_DEBUG=WARN -- leaky
run leaky-cleanup "action=cleanup,report=$r/leaky-cleanup.json" NCCL_DEBUG=WARN -- leaky
run destroy-in-hook "report=$r/destroy-in-hook.json" NCCL_DEBUG=WARN -- destroy-in-hook
run pending "report=$r/pending.json" NCCL_DEBUG=WARN -- pending --count 67108864 --iters 200

tar -C "$out" -czf "$out/reports.tar.gz" reports && rm -rf "$out/reports"
say ""
say "# done"

# Ranks in separate JVMs (multi-rank: one JVM per rank, one GPU each, cudaSetDevice(rank)), leaky
# at exit: the surviving ranks' NCCL proxy lines without the agent, none with action=cleanup; and
# a rank killed with SIGKILL, whose survivor's cleanup stays within its timeout.
r=$reports

# Lines of the log since line $1 that show what the ranks' NCCL said about their peers, and how
# long each rank took to exit once told to.
peer_lines() {
  local lines
  lines=$(tail -n +"$1" "$log" | grep -E "Service thread|Proxy Service|NCCL WARN|exited [0-9]+, [0-9]+ ms|killed with SIGKILL|SUMMARY: ncclguard" | head -60)
  say "--- peers' NCCL lines and exit times of this run:"
  say "${lines:-(none)}"
}

procs() { # NAME AGENT_OPTIONS NCCL_DEBUG [SAMPLE_ARGS...]
  local name=$1 opts=$2 debug=$3; shift 3
  local from
  from=$(($(wc -l <"$log") + 1))
  run "$name" "$opts" NCCL_DEBUG="$debug" -- multi-rank --ranks 2 "$@"
  peer_lines "$from"
}

procs procs-leaky-warn none WARN
procs procs-leaky-info none INFO
procs procs-cleanup-warn "action=cleanup,report=$r/procs-cleanup-warn-%p.json" WARN
procs procs-cleanup-info "action=cleanup,report=$r/procs-cleanup-info-%p.json" INFO
procs procs-kill-noagent none WARN --kill 1
procs procs-kill "action=cleanup,timeout=4s,report=$r/procs-kill-%p.json" WARN --kill 1

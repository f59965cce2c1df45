# Attach to a running sample on the GPUs (started without the agent), dump its live report, make it
# leak, dump again, and let it exit with cleanup. Sourced by scripts/gpu-check.sh (part "attach").
r=$reports
work=$(mktemp -d)
mkfifo "$work/stdin"
say ""
say "### attach: serve (2 ranks) started without the agent, NCCL RAS on (its default)"
NCCL_DEBUG=WARN "$java" -jar "$samples" serve <"$work/stdin" >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
exec 7>"$work/stdin"   # held open: the sample stops at the end of its stdin
await_line() {   # await_line PREFIX SECONDS
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    grep -q "^$1" "$work/serve.out" 2>/dev/null && return 0
    kill -0 "$serve_pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
timed() {   # timed NAME COMMAND...: runs it, logs its output, exit status and wall time
  local name=$1 start end rc; shift
  say "\$ ${*#$PWD/}"
  start=$(date +%s%N)
  "$@" >"$work/$name.out" 2>"$work/$name.err"; rc=$?
  end=$(date +%s%N)
  cat "$work/$name.out" "$work/$name.err" >>"$log"
  say "exit status $rc, wall $(( (end - start) / 1000000 )) ms"
}
if await_line "serve: ready" 120; then
  timed attach "$java" -jar "$agent" attach "$serve_pid" "action=cleanup,report=$r/attach.json"
  timed dump-before-leak "$java" -jar "$agent" dump "$serve_pid"
  echo leak >&7
  await_line "serve: leaked" 60 || say "no 'serve: leaked' line within 60 s"
  timed dump-json "$java" -jar "$agent" dump "$serve_pid" --json
  cp "$work/dump-json.out" "$r/attach-live.json"
  timed dump-text "$java" -jar "$agent" dump "$serve_pid"
  start=$(date +%s%N)
  echo stop >&7
  exec 7>&-
  wait "$serve_pid"; rc=$?
  end=$(date +%s%N)
  say "serve: exit status $rc, $(( (end - start) / 1000000 )) ms from stop to exit (cleanup included)"
else
  say "serve did not get ready within 120 s"
  exec 7>&-
  kill "$serve_pid" 2>/dev/null; wait "$serve_pid"
fi
say "--- serve stdout"; cat "$work/serve.out" >>"$log"
say "--- serve stderr (NCCL warnings, the agent's exit report)"; cat "$work/serve.err" >>"$log"
# the live JSON is in the log already, from the dump --json above
[ -f "$r/attach.json" ] && { say "--- attach.json (the exit report)"; cat "$r/attach.json" >>"$log"; echo >>"$log"; }
rm -rf "$work"

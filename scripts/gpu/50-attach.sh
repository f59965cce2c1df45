# Attach to a running sample on the GPUs (started without the agent), dump its live report, make it
# leak, dump again, and let it exit with cleanup: over JNA interface mapping (JNA's Function is
# retransformed) and over hand-written JNI (native methods of classes loaded before the attach,
# reached through their call sites). Sourced by scripts/gpu-check.sh (part "attach").
r=$reports
attach_run() {   # attach_run NAME SERVE_ARGS...
  local name=$1; shift
  local work serve_pid rc start end
  work=$(mktemp -d)
  mkfifo "$work/stdin"
  say ""
  say "### attach-$name: serve${*:+ $*} (2 ranks) started without the agent, NCCL RAS on (its default)"
  NCCL_DEBUG=WARN "$java" -jar "$samples" serve "$@" <"$work/stdin" >"$work/serve.out" 2>"$work/serve.err" &
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
    local what=$1 s e code; shift
    say "\$ ${*#$PWD/}"
    s=$(date +%s%N)
    "$@" >"$work/$what.out" 2>"$work/$what.err"; code=$?
    e=$(date +%s%N)
    cat "$work/$what.out" "$work/$what.err" >>"$log"
    say "exit status $code, wall $(( (e - s) / 1000000 )) ms"
  }
  if await_line "serve: ready" 120; then
    timed attach "$java" -jar "$agent" attach "$serve_pid" "action=cleanup,report=$r/attach-$name.json"
    timed dump-before-leak "$java" -jar "$agent" dump "$serve_pid"
    echo leak >&7
    await_line "serve: leaked" 60 || say "no 'serve: leaked' line within 60 s"
    timed dump-json "$java" -jar "$agent" dump "$serve_pid" --json
    cp "$work/dump-json.out" "$r/attach-$name-live.json"
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
  [ -f "$r/attach-$name.json" ] && { say "--- attach-$name.json (the exit report)"; cat "$r/attach-$name.json" >>"$log"; echo >>"$log"; }
  rm -rf "$work"
}
attach_run jna
attach_run jni --bridge jni

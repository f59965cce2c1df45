# The CI commands on this run's own output: check and merge on the reports the earlier parts wrote,
# explain on the NCCL log so far, and on a real two-process NCCL job in which rank 1 exits without
# ncclCommDestroy (C, no Java: the agent sees no report there; it shows real NCCL 2.28 warnings).
r=$reports

# ci NAME ARGS...: runs `java -jar ncclguard-agent.jar ARGS`, logs its output and exit status
ci() {
  local name=$1; shift
  say ""
  say "### ci $name"
  say "\$ java -jar ncclguard-agent.jar $*"
  "$java" -jar "$agent" "$@" >>"$log" 2>&1
  say "exit status $?"
}

ci check-clean check "$r/clean.json" "$r/destroy-in-hook.json"
ci check-all check "$r"
ci merge merge "$r/leaky.json" "$r/leaky-cleanup.json" "$r/clean.json" --html "$r/merge.html"
cp "$log" "$r/gpu-check-so-far.log"
ci explain-log explain "$r/gpu-check-so-far.log" "$r"

say ""
say "### ci exit-warnings (two processes, rank 1 exits without ncclCommDestroy)"
cudart=$(for d in /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13.0/targets/x86_64-linux/lib; do
  [ -e "$d/libcudart.so.13" ] && echo "$d" && break; done)
if gcc -O1 -o "$r/ci-exit-warnings" scripts/gpu/ci-exit-warnings.c -L/usr/lib/x86_64-linux-gnu -l:libnccl.so.2 \
     -L"$cudart" -l:libcudart.so.13 -Wl,-rpath,"$cudart" >>"$log" 2>&1; then
  NCCL_DEBUG=WARN timeout 120 "$r/ci-exit-warnings" >"$r/exit-warnings.log" 2>&1
  say "exit status $?"
  cat "$r/exit-warnings.log" >>"$log"
  rm -f "$r/ci-exit-warnings"
  ci explain-exit explain "$r/exit-warnings.log" "$r/leaky.json"
else
  say "could not build scripts/gpu/ci-exit-warnings.c (see above)"
fi

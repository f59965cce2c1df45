# Start-up and exit with 100,000 leaked handles, with and without the agent, on this machine's idle
# cores and the emulator built here (see 70-cpu.sh). About 2 minutes.
if cpu_setup; then
  say ""
  say "### ProcessBench startup, 20 runs each, alternating"
  "$java" -cp "$bench" dev.ncclguard.bench.ProcessBench startup --agent "$agent" --emu "$emu" --samples "$samples" \
    --runs 20 --out "$cpu_out" 2>&1 | tee -a "$log"
  say ""
  say "### ProcessBench exit, 100,000 leaked events, 5 runs"
  "$java" -cp "$bench" dev.ncclguard.bench.ProcessBench exit --agent "$agent" --emu "$emu" --handles 100000 \
    --runs 5 --out "$cpu_out" 2>&1 | tee -a "$log"
fi

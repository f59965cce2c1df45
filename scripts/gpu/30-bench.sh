# What the agent costs a real 2-GPU allreduce loop (GPU_RANKS=1 on a one-GPU machine): JVMs with and without the agent, alternating
# (which goes first flips every round), BENCH_ROUNDS (default 5) rounds per size; medians and their ratio.
# Needs .gpu/ncclguard-bench.jar (scripts/gpu-prepare.sh). Proof: the two "ratio" lines, >= 0.99.
bench=${bench:-.gpu/ncclguard-bench.jar}
# bytes, timed allreduces, warmup allreduces (the JIT compiles the JNA and agent paths in warmup)
bench_specs=${BENCH_SPECS:-"1024:50000:5000 67108864:1000:100"}
bench_median() {
  grep "^$1	" "$2" | cut -f2 | sort -g |
    awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'
}
if [ ! -f "$bench" ]; then
  say "SKIP: no $bench (run scripts/gpu-prepare.sh)"
else
  for spec in $bench_specs; do
    IFS=: read -r bytes iters warmup <<<"$spec"
    tsv="$reports/bench-$bytes.tsv"
    : >"$tsv"
    for round in $(seq 1 "${BENCH_ROUNDS:-5}"); do
      order="without with"; [ $((round % 2)) -eq 0 ] && order="with without"
      for variant in $order; do
        agentarg=()
        [ "$variant" = with ] && agentarg=("-javaagent:$agent=text=none,report=$reports/bench-$bytes-$round.json")
        line=$(NCCL_DEBUG=WARN "$java" "${agentarg[@]}" -cp "$bench" dev.ncclguard.bench.gpu.AllReduceLoop \
                 --bytes "$bytes" --iters "$iters" --warmup "$warmup" --ranks "${GPU_RANKS:-2}" 2>>"$log" | grep '^allreduce ')
        say "round $round $variant: ${line:-FAILED (see the log above)}"
        gbps=$(echo "$line" | sed -n 's/.*GB\/s=\([0-9.]*\).*/\1/p')
        [ -n "$gbps" ] && printf '%s\t%s\n' "$variant" "$gbps" >>"$tsv"
      done
    done
    mw=$(bench_median without "$tsv"); mg=$(bench_median with "$tsv")
    say "allreduce $bytes bytes on ${GPU_RANKS:-2} GPUs: median GB/s without the agent $mw, with $mg," \
        "ratio $(awk -v a="$mg" -v b="$mw" 'BEGIN {if (b > 0) printf "%.4f", a / b; else print "nan"}') (target >= 0.99)"
  done
fi

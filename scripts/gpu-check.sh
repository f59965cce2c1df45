#!/usr/bin/env bash
# The whole GPU check in one call, on a machine with real NCCL and CUDA (see docs/gpu-results.md).
# Needs .gpu/ from scripts/gpu-prepare.sh. Usage: scripts/gpu-check.sh OUTDIR [PART...]
# Runs scripts/gpu/NN-*.sh in order (or only the named parts, e.g. agent-core; the cpu parts and
# builds only when named), each adding to OUTDIR/gpu-check.log (everything printed, with each
# report); reports end in OUTDIR/reports.tar.gz.
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu-check.sh OUTDIR [PART...]}
shift
. scripts/gpu/lib.sh
gpu_env "$out"

say "# ncclguard GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi -L 2>&1 | tee -a "$log"
nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1 | head -1 | sed 's/^/driver /' | tee -a "$log"
ls -l /usr/lib/x86_64-linux-gnu/libnccl.so.2* 2>&1 | tee -a "$log"
"$java" -version 2>&1 | tee -a "$log"

for part in scripts/gpu/[0-9][0-9]-*.sh; do
  name=$(basename "$part" .sh); name=${name#[0-9][0-9]-}
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then
    continue
  fi
  # the CPU benchmarks (10 minutes) and the comparison of builds run only when named
  [ $# -eq 0 ] && { [ "${name#cpu}" != "$name" ] || [ "$name" = builds ]; } && continue
  say ""
  say "## $name"
  . "$part"
done

tar -C "$out" -czf "$out/reports.tar.gz" reports && rm -rf "$out/reports"
say ""
say "# done"

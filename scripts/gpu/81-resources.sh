# NCCL's other resources on real NCCL (issue 16): ncclMemAlloc/Free, registrations, windows and
# device communicators, tracked and cleaned over each bridge; NCCL 2.29's grow and revoke, which
# NCCL 2.28.3 lacks, answered as absent (the sample's step fails, its report written) and never a
# crash of the agent. Each run's exit status, output and JSON report go to the log.
r=$reports
for bridge in jna jna-direct jni; do
  run "res-$bridge-leaky" "report=$r/res-$bridge-leaky.json" NCCL_DEBUG=WARN -- resources-leaky --bridge "$bridge"
  run "res-$bridge-release" "action=cleanup,report=$r/res-$bridge-release.json" NCCL_DEBUG=WARN -- resources-leaky --bridge "$bridge"
  run "res-$bridge-clean" "report=$r/res-$bridge-clean.json" NCCL_DEBUG=WARN -- resources-clean --bridge "$bridge"
done
run res-jni-bindings-release "action=cleanup,report=$r/res-jni-bindings-release.json,bindings=.gpu/bindings-jni.txt" \
  NCCL_DEBUG=WARN -- resources-leaky --bridge jni-bindings

# 2.29's functions: where NCCL lacks them (2.28.3), a failed step (exit status 1) and a report
for bridge in jna jna-direct jni; do
  run "grow-$bridge" "report=$r/grow-$bridge.json" NCCL_DEBUG=WARN -- grow-revoke --bridge "$bridge"
done

if java_at_least 22; then
  run res-ffm-release "action=cleanup,report=$r/res-ffm-release.json" NCCL_DEBUG=WARN -- resources-leaky --bridge ffm
  run grow-ffm "report=$r/grow-ffm.json" NCCL_DEBUG=WARN -- grow-revoke --bridge ffm
fi

# JavaCPP's presets link 2.29's API (libjninccl): on NCCL 2.28.3 their loader may refuse, which
# is the presets' answer, not the agent's; the log shows which
if has_javacpp; then
  run_javacpp res-javacpp-release action=cleanup,report resources-leaky
  run_javacpp grow-javacpp report grow-revoke
else
  say "no .gpu/javacpp: JavaCPP resource scenarios not run (scripts/gpu-prepare.sh copies its jars)"
fi

# one line per run for the log's reader: exit status and what each report counted
for f in "$r"/res-*.json "$r"/grow-*.json; do
  [ -f "$f" ] || continue
  say "$(basename "$f" .json): $(tr -d ' \n' <"$f" | grep -o '"summary":{[^}]*}')"
done

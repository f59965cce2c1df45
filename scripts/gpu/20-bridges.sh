# The native-method bridges on real NCCL: JNA direct mapping, hand-written JNI named as the C
# functions, hand-written JNI of other names through a bindings file, and JavaCPP's presets
# (org.bytedeco:cuda, when scripts/gpu-prepare.sh put its jars in .gpu/javacpp).
r=$reports
for bridge in jna-direct jni; do
  run "$bridge-leaky" "report=$r/$bridge-leaky.json" NCCL_DEBUG=WARN -- leaky --bridge "$bridge"
  run "$bridge-release" "action=cleanup,report=$r/$bridge-release.json" NCCL_DEBUG=WARN -- leaky --bridge "$bridge"
  run "$bridge-clean" "report=$r/$bridge-clean.json" NCCL_DEBUG=WARN -- clean --bridge "$bridge"
done
run jni-bindings-release "action=cleanup,report=$r/jni-bindings-release.json,bindings=.gpu/bindings-jni.txt" \
  NCCL_DEBUG=WARN -- leaky --bridge jni-bindings
run jna-direct-pending "report=$r/jna-direct-pending.json" NCCL_DEBUG=WARN -- pending --bridge jna-direct --count 67108864 --iters 200
run jni-destroy-in-hook "report=$r/jni-destroy-in-hook.json" NCCL_DEBUG=WARN -- destroy-in-hook --bridge jni

# JavaCPP's presets: the samples jar and .gpu/javacpp/*.jar on the class path (no -jar)
if has_javacpp; then
  run_javacpp javacpp-leaky report leaky
  run_javacpp javacpp-leaky-release action=cleanup,report leaky
  run_javacpp javacpp-clean report clean
else
  say "no .gpu/javacpp: JavaCPP scenarios not run (scripts/gpu-prepare.sh copies its jars)"
fi

# FFM (java.lang.foreign) needs JDK 22+: only when the runtime that travelled is one
if java_at_least 22; then
  run ffm-leaky "report=$r/ffm-leaky.json" NCCL_DEBUG=WARN -- leaky --bridge ffm
  run ffm-release "action=cleanup,report=$r/ffm-release.json" NCCL_DEBUG=WARN -- leaky --bridge ffm
  run ffm-clean "report=$r/ffm-clean.json" NCCL_DEBUG=WARN -- clean --bridge ffm
fi

# The native-method bridges on real NCCL: JNA direct mapping, hand-written JNI named as the C
# functions, hand-written JNI of other names through a bindings file, and JavaCPP's presets
# (org.bytedeco:cuda, when scripts/gpu-prepare.sh put its jars in .gpu/javacpp).
r=$reports
for bridge in jna-direct jni; do
  run "$bridge-leaky" "report=$r/$bridge-leaky.json" NCCL_DEBUG=WARN -- leaky --bridge "$bridge"
  run "$bridge-cleanup" "action=cleanup,report=$r/$bridge-cleanup.json" NCCL_DEBUG=WARN -- leaky --bridge "$bridge"
  run "$bridge-clean" "report=$r/$bridge-clean.json" NCCL_DEBUG=WARN -- clean --bridge "$bridge"
done
run jni-bindings-cleanup "action=cleanup,report=$r/jni-bindings-cleanup.json,bindings=.gpu/bindings-jni.txt" \
  NCCL_DEBUG=WARN -- leaky --bridge jni-bindings
run jna-direct-pending "report=$r/jna-direct-pending.json" NCCL_DEBUG=WARN -- pending --bridge jna-direct --count 67108864 --iters 200
run jni-destroy-in-hook "report=$r/jni-destroy-in-hook.json" NCCL_DEBUG=WARN -- destroy-in-hook --bridge jni

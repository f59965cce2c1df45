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
if ls .gpu/javacpp/*.jar >/dev/null 2>&1; then
  jcp=$samples$(printf ':%s' .gpu/javacpp/*.jar)
  for case in "leaky:report" "leaky:action=cleanup,report" "clean:report"; do
    scenario=${case%%:*}; opts=${case#*:}
    name=javacpp-$scenario$( [ "${opts#action=cleanup}" != "$opts" ] && echo -release )
    say ""
    say "### $name"
    say "\$ java -javaagent:$agent=$opts=$r/$name.json -cp ncclguard-samples.jar:javacpp/*.jar dev.ncclguard.samples.Samples $scenario --bridge javacpp"
    start=$(date +%s%N)
    NCCL_DEBUG=WARN "$java" "-javaagent:$agent=$opts=$r/$name.json" -Dorg.bytedeco.javacpp.cachedir=/tmp/ncclguard-javacpp-cache \
      -cp "$jcp" dev.ncclguard.samples.Samples "$scenario" --bridge javacpp >>"$log" 2>&1
    rc=$?
    end=$(date +%s%N)
    say "exit status $rc, wall $(( (end - start) / 1000000 )) ms"
    [ -f "$r/$name.json" ] && { say "--- $name.json"; cat "$r/$name.json" >>"$log"; echo >>"$log"; }
  done
else
  say "no .gpu/javacpp: JavaCPP scenarios not run (scripts/gpu-prepare.sh copies its jars)"
fi

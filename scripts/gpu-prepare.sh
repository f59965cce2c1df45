#!/usr/bin/env bash
# Prepares .gpu/ (ignored by git) for a run on a GPU machine, which has no Java and no Maven:
# a jlink'd Java runtime, the agent jar, the samples jar and the bench jar (its GPU loop). Then, with the device tool:
#   run(command="scripts/gpu-check.sh $OUT", carry=[".gpu"])
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -B -q install -DskipTests
mkdir -p .gpu
# jdk.management.agent and java.management.rmi: the dump command's local JMX connector; jdk.management:
# the process CPU time that bench's exit measurement reads
modules=java.base,java.instrument,java.management,jdk.attach,java.logging,jdk.unsupported,jdk.jfr,jdk.management.agent,java.management.rmi,jdk.management
# GPU_JDK picks the JDK whose runtime travels (default: the one on PATH); JDK 22+ also shows FFM
jdk=${GPU_JDK:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}
want=$("$jdk/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.runtime.version = //p')
have=$(.gpu/jre/bin/java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.runtime.version = //p' || true)
missing=$(for m in ${modules//,/ }; do .gpu/jre/bin/java --list-modules 2>/dev/null | grep -q "^$m@" || echo "$m"; done)
if [ "$want" != "$have" ] || [ -n "$missing" ]; then
  rm -rf .gpu/jre
  "$jdk/bin/jlink" --add-modules "$modules" \
        --strip-debug --no-man-pages --no-header-files --compress=2 --output .gpu/jre
fi
cp agent/target/ncclguard-agent.jar agent/target/ncclguard-agent-classes.jar samples/target/ncclguard-samples.jar bench/target/ncclguard-bench.jar .gpu/
# bench's stand-in libcudart.so.13 and libnccl.so.2 (they return at once): the wrappers' own cost
rm -rf .gpu/stub-gpu && cp -r bench/target/stub-gpu .gpu/stub-gpu
cp samples/bindings/jni.txt .gpu/bindings-jni.txt
# the JDK's jni.h for scripts/gpu/80-native.sh, which links the EP runtime there with its libnccl_static.a
rm -rf .gpu/jdk-include && cp -r "$jdk/include" .gpu/jdk-include
# scripts/gpu/85-torch.sh's Java client (no javac travels; its JNI library is compiled there with gcc)
rm -rf .gpu/torch && mkdir -p .gpu/torch
"$jdk/bin/javac" --release 17 -d .gpu/torch scripts/gpu/torch/TorchClient.java
# JavaCPP's CUDA presets for the javacpp bridge (about 6.5 MB: the linux-x86_64 JNI libraries only)
mkdir -p .gpu/javacpp
ls agent/target/javacpp/*.jar >/dev/null 2>&1 || mvn -B -q -pl agent dependency:copy@javacpp -DskipTests=false
cp agent/target/javacpp/*.jar .gpu/javacpp/
# the counting build of the native part (make prof; ng.h, NG_CALL_PROFILE): calls per wrapper and path,
# its generic path's cycles, printed at exit with NCCLGUARD_NATIVE_DEBUG=1 where a JVM loads it with
# -Dncclguard.test.native-library=.gpu/libncclguard-prof.so (the GPU hosts have no profiler)
make -s -C native-shim/src/main/c GEN="$PWD/native-shim/target/native" OUT="$PWD/native-shim/target/classes/ncclguard-native/linux-x86_64" \
  ABI="$PWD/abi" JAVA_HOME="$jdk" TEST_OUT="$PWD/native-shim/target/native-test" prof
cp native-shim/target/native-test/prof/libncclguard.so .gpu/libncclguard-prof.so
# the same with the steps of a creation, a release and a hint's miss timed (NG_CALL_STEPS)
cp native-shim/target/native-test/prof-steps/libncclguard.so .gpu/libncclguard-prof-steps.so
# the shipped build with the forwarding switch alone (NG_FORWARD_TOGGLE): the in-process rounds' loops
cp native-shim/target/native-test/ab/libncclguard.so .gpu/libncclguard-ab.so
# scripts/evict-time.sh on the GPU host (HOT_ICOUNT=.gpu/icount/hot_icount HOT_LIB=.gpu/icount/libncclguard-bench-native.so
# HOT_STUB=.gpu/stub-gpu): the stand-in loop in PyTorch's regime on that host's cores, without a JVM
# (built by scripts/hot-icount.sh, which needs valgrind's headers, not valgrind)
if [ -f /usr/include/valgrind/callgrind.h ]; then
  mkdir -p .gpu/icount
  (me=scripts/gpu-prepare.sh need_valgrind=0; set --; . scripts/hot-icount.sh; cp "$out/hot_icount" "$hot" .gpu/icount/)
fi
# the counting builds' debug sections stay here (.gpu travels whole, under 64 MiB)
strip --strip-debug .gpu/libncclguard-prof.so .gpu/libncclguard-prof-steps.so
du -sh .gpu

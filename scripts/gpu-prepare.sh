#!/usr/bin/env bash
# Prepares .gpu/ (ignored by git) for a run on a GPU machine, which has no Java and no Maven:
# a jlink'd Java runtime, the agent jar and the samples jar. Then, with the device tool:
#   run(command="scripts/gpu-check.sh $OUT", carry=[".gpu"])
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -B -q install -DskipTests
mkdir -p .gpu
if [ ! -x .gpu/jre/bin/java ]; then
  jlink --add-modules java.base,java.instrument,java.management,jdk.attach,java.logging,jdk.unsupported,jdk.jfr \
        --strip-debug --no-man-pages --no-header-files --compress=2 --output .gpu/jre
fi
cp agent/target/ncclguard-agent.jar samples/target/ncclguard-samples.jar .gpu/
cp samples/bindings/jni.txt .gpu/bindings-jni.txt
# JavaCPP's CUDA presets for the javacpp bridge (about 6.5 MB: the linux-x86_64 JNI libraries only)
mkdir -p .gpu/javacpp
ls agent/target/javacpp/*.jar >/dev/null 2>&1 || mvn -B -q -pl agent dependency:copy@javacpp -DskipTests=false
cp agent/target/javacpp/*.jar .gpu/javacpp/
du -sh .gpu

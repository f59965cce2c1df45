#!/usr/bin/env bash
# Prepares .gpu/ (ignored by git) for a run on a GPU machine, which has no Java and no Maven:
# a jlink'd Java runtime, the agent jar, the samples jar and the bench jar (its GPU loop). Then, with the device tool:
#   run(command="scripts/gpu-check.sh $OUT", carry=[".gpu"])
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -B -q install -DskipTests
mkdir -p .gpu
if [ ! -x .gpu/jre/bin/java ]; then
  jlink --add-modules java.base,java.instrument,java.management,jdk.attach,java.logging,jdk.unsupported,jdk.jfr \
        --strip-debug --no-man-pages --no-header-files --compress=2 --output .gpu/jre
fi
cp agent/target/ncclguard-agent.jar samples/target/ncclguard-samples.jar bench/target/ncclguard-bench.jar .gpu/
du -sh .gpu

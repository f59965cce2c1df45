#!/usr/bin/env bash
# Builds the project, then runs the leaky sample under the agent: real NCCL where the machine has
# it, else the project's emulator. The text report goes to stderr, the JSON report to target/.
# The build's own output (gcc's and make's lines among it) goes to target/demo-build.log, shown
# only when the build fails; a progress line says what it is at.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target
log=target/demo-build.log
start=$SECONDS
echo "demo: building (mvn install -DskipTests, a few minutes the first time; log: $log)"
mvn -B -ntp -Dstyle.color=never install -DskipTests >"$log" 2>&1 &
mvn=$!
module=
while kill -0 "$mvn" 2>/dev/null; do
  sleep 5
  now=$(sed -nE 's/.*\[INFO\] Building (.*[^ ]) +\[([0-9]+\/[0-9]+)\].*/\2 \1/p' "$log" | tail -n 1)
  if [ -n "$now" ] && [ "$now" != "$module" ]; then
    module=$now
    echo "demo: building $module ($((SECONDS - start)) s)"
  elif [ $(((SECONDS - start) % 30)) -lt 5 ]; then
    echo "demo: still building ${module:-} ($((SECONDS - start)) s)"
  fi
done
if ! wait "$mvn"; then
  grep -E '\[ERROR\]|error:' "$log" >&2 || tail -n 40 "$log" >&2
  echo "demo: the build failed (the whole log: $log)" >&2
  exit 1
fi
echo "demo: built in $((SECONDS - start)) s; running the leaky sample under the agent"
java -javaagent:agent/target/ncclguard-agent.jar=report=target/demo-report.json \
     -Dncclguard.emu=emulator/target/emu \
     -jar samples/target/ncclguard-samples.jar leaky
echo "demo: JSON report in target/demo-report.json"

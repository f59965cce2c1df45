#!/usr/bin/env bash
# Builds the project, then runs the leaky sample under the agent: real NCCL where the machine has
# it, else the project's emulator. The text report goes to stderr, the JSON report to target/.
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -B -q install -DskipTests
mkdir -p target
java -javaagent:agent/target/ncclguard-agent.jar=report=target/demo-report.json \
     -Dncclguard.emu=emulator/target/emu \
     -jar samples/target/ncclguard-samples.jar leaky
echo "demo: JSON report in target/demo-report.json"

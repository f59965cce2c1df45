#!/usr/bin/env bash
# What the Maven build needs to build libncclguard.so for linux-aarch64 and run its C tests under
# qemu-user (native-shim/pom.xml): Debian's cross compiler, arm64 libc and qemu-user-static,
# installed when absent (as root, or through sudo), as scripts/test.sh installs Chromium.
set -euo pipefail
if command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && command -v qemu-aarch64-static >/dev/null 2>&1 \
  && [ -d /usr/aarch64-linux-gnu/lib ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then sudo=; elif command -v sudo >/dev/null 2>&1; then sudo=sudo; else
  echo "scripts/aarch64-tools.sh: the linux-aarch64 build and its tests under qemu need gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user-static, which cannot be installed without root: install them, or build without (a WARNING line, no linux-aarch64 library)" >&2
  exit 2
fi
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static

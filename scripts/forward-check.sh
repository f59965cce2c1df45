#!/usr/bin/env bash
# The framework loop of NativeHotCalls (2 creations, 2 records, an all-reduce, a query, 2 releases)
# on bench's stand-ins, without a JVM, through the counting build of the native part (make prof):
# tracked, with every wrapper forwarding at once (ncclguard_prof_forward, what the in-process rounds
# of scripts/gpu/85-torch.sh compare against), and calling the stand-ins directly. The gap between
# the last two is the agent's cost those rounds leave out. Needs a built tree (mvn -B install
# -DskipTests) and valgrind's headers (hot_icount.c is also scripts/icount.sh's driver).
set -euo pipefail
cd "$(dirname "$0")/.."
me=scripts/forward-check.sh need_valgrind=0
. scripts/hot-icount.sh
jdk=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
make -s -C native-shim/src/main/c GEN="$PWD/native-shim/target/native" OUT="$PWD/native-shim/target/classes/ncclguard-native/linux-x86_64" \
  ABI="$PWD/abi" JAVA_HOME="$jdk" TEST_OUT="$PWD/native-shim/target/native-test" prof
LD_LIBRARY_PATH=$stub $out/hot_icount native-shim/target/native-test/prof/libncclguard.so $hot "${CALLS:-200000}" --forward

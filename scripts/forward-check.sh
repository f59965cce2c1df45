#!/usr/bin/env bash
# The framework loop of NativeHotCalls (2 creations, 2 records, an all-reduce, a query, 2 releases)
# on bench's stand-ins, without a JVM, through the counting build of the native part (make prof):
# tracked, with every wrapper forwarding at once (ncclguard_prof_forward, what the in-process rounds
# of scripts/gpu/85-torch.sh compare against), and calling the stand-ins directly. The gap between
# the last two is the agent's cost those rounds leave out. Needs a built tree (mvn -B install
# -DskipTests) and valgrind's headers (hot_icount.c is also scripts/icount.sh's driver).
set -euo pipefail
cd "$(dirname "$0")/.."
stub=bench/target/stub-gpu
hot=bench/target/classes/dev/ncclguard/bench/native/linux-x86_64/libncclguard-bench-native.so
for f in $stub/libcudart.so.13 $hot; do
  [ -f $f ] || { echo "scripts/forward-check.sh: $f is missing: build first (mvn -B install -DskipTests)" >&2; exit 2; }
done
[ -f /usr/include/valgrind/callgrind.h ] || { echo "scripts/forward-check.sh: valgrind's headers are needed (/usr/include/valgrind/callgrind.h)" >&2; exit 2; }
jdk=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
make -s -C native-shim/src/main/c GEN="$PWD/native-shim/target/native" OUT="$PWD/native-shim/target/classes/ncclguard-native/linux-x86_64" \
  ABI="$PWD/abi" JAVA_HOME="$jdk" TEST_OUT="$PWD/native-shim/target/native-test" prof
out=bench/target/icount
mkdir -p $out
gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -Inative-shim/src/main/c -o $out/hot_icount bench/src/main/c/hot_icount.c -ldl
LD_LIBRARY_PATH=$stub $out/hot_icount native-shim/target/native-test/prof/libncclguard.so $hot "${CALLS:-200000}" --forward

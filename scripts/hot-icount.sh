# Sourced by scripts/icount.sh, scripts/lines.sh and scripts/forward-check.sh (from the repository
# root, as $me): checks what they need (valgrind's headers, and valgrind itself unless
# need_valgrind=0; a built tree), names bench's stand-ins ($stub), NativeHotCalls' JNI library
# ($hot), the output folder ($out) and the libraries to measure ($libs: the arguments, default the
# agent's own build), and builds bench/src/main/c/hot_icount.c into $out/hot_icount.
# A host without the sources' tools (a GPU machine: scripts/gpu-prepare.sh carries them in .gpu/icount)
# names what was built elsewhere: HOT_ICOUNT (the hot_icount program, whose folder is then the output
# folder), HOT_LIB (NativeHotCalls' JNI library) and HOT_STUB (bench's stand-ins' folder); nothing is
# built then.
if [ -n "${HOT_ICOUNT:-}" ]; then
  stub=${HOT_STUB:?HOT_STUB names the stand-ins folder with HOT_ICOUNT}
  hot=${HOT_LIB:?HOT_LIB names NativeHotCalls JNI library with HOT_ICOUNT}
  libs=("$@")
  [ ${#libs[@]} -eq 0 ] && { echo "$me: name the libraries to time with HOT_ICOUNT" >&2; exit 2; }
  [ "$(basename "$HOT_ICOUNT")" = hot_icount ] && [ -x "$HOT_ICOUNT" ] ||
    { echo "$me: HOT_ICOUNT=$HOT_ICOUNT is no hot_icount program (scripts/gpu-prepare.sh puts one in .gpu/icount)" >&2; exit 2; }
  out=$(dirname "$HOT_ICOUNT")
  return 0
fi
if [ "${need_valgrind:-1}" != 0 ]; then
  command -v valgrind >/dev/null || { echo "$me: valgrind is needed (Debian: apt-get install valgrind)" >&2; exit 2; }
fi
[ -f /usr/include/valgrind/callgrind.h ] || { echo "$me: valgrind's headers are needed (/usr/include/valgrind/callgrind.h)" >&2; exit 2; }
stub=bench/target/stub-gpu
hot=bench/target/classes/dev/ncclguard/bench/native/linux-x86_64/libncclguard-bench-native.so
for f in $stub/libcudart.so.13 $hot; do
  [ -f $f ] || { echo "$me: $f is missing: build first (mvn -B install -DskipTests)" >&2; exit 2; }
done
libs=("$@")
[ ${#libs[@]} -eq 0 ] && libs=(native-shim/target/classes/ncclguard-native/linux-x86_64/libncclguard.so)
out=bench/target/icount
mkdir -p $out
gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -Inative-shim/src/main/c -o $out/hot_icount bench/src/main/c/hot_icount.c -ldl

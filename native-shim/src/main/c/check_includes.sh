#!/bin/sh
# The include graph of libncclguard.so has no circle but a header with its own source (x.h <-> x.c),
# and no source file is #included (docs/design.md, "The native part"; the C side of
# PackageLayersTest). A file depends on each header it includes ("..." only, found beside it, then
# in the directories given); a header depends on its own source and on every source that defines a
# name it declares (a hidden global of that source's object), since using the header is using that
# source: a header of utilities whose bodies live in the JNI file puts every user in a circle with it.
#   check_includes.sh <dir of the sources' objects, x.o per x.c> <source dir> [include dir...]
set -e
objs=$1
src=$(cd "$2" && pwd)
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# a file's name in the report: its path under the source dir, else dir/name
show() {
  case $1 in
  "$src"/*) echo "${1#"$src"/}" ;;
  *) echo "$(basename "$(dirname "$1")")/$(basename "$1")" ;;
  esac
}

: >"$work/edges"
fail=0
for f in "$src"/*.c "$src"/*.h; do echo "$f"; done >"$work/todo"
: >"$work/seen"
while [ -s "$work/todo" ]; do
  f=$(head -n 1 "$work/todo")
  sed -i 1d "$work/todo"
  grep -qxF "$f" "$work/seen" && continue
  echo "$f" >>"$work/seen"
  for name in $(sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$f"); do
    to=""
    for d in "$(dirname "$f")" "$@"; do
      if [ -f "$d/$name" ]; then
        to="$(cd "$(dirname "$d/$name")" && pwd)/$(basename "$name")"
        break
      fi
    done
    [ -n "$to" ] || continue # a system or generated header not given: outside the graph
    case $to in
    *.c)
      echo "check_includes: $(show "$f") includes the source file $(show "$to")" >&2
      fail=1
      ;;
    esac
    echo "$(show "$f") $(show "$to") includes" >>"$work/edges"
    echo "$to" >>"$work/todo"
  done
done

# a header's own source, and the sources whose names it declares or uses
for h in $(grep '\.h$' "$work/seen"); do
  base=$(basename "$h" .h)
  [ -f "$(dirname "$h")/$base.c" ] && echo "$(show "$h") $(show "$(dirname "$h")/$base.c") is-its-header" >>"$work/edges"
  gcc -fpreprocessed -dD -E -P "$h" 2>/dev/null | grep -o '[A-Za-z_][A-Za-z0-9_]*' | sort -u >"$work/names"
  for o in "$objs"/*.o; do
    c=$(basename "$o" .o).c
    [ -f "$src/$c" ] || continue
    [ "$h" = "$src/$(basename "$o" .o).h" ] && continue
    readelf -sW "$o" | awk '$5 == "GLOBAL" && $6 == "HIDDEN" && $7 != "UND" {print $8}' | sort -u >"$work/defs"
    used=$(comm -12 "$work/names" "$work/defs" | head -n 3 | tr '\n' ' ')
    [ -n "$used" ] && echo "$(show "$h") $c names ${used% }" >>"$work/edges"
  done
done

# the strongly connected groups (transitive closure: a few dozen files), and what is allowed
awk '
  { from = $1; to = $2; $1 = ""; $2 = ""; why[from, to] = substr($0, 3); n[from]; n[to]; e[from, to] = 1 }
  END {
    for (a in n) for (b in n) if ((a, b) in e) r[a, b] = 1
    for (k in n) for (a in n) if (r[a, k]) for (b in n) if (r[k, b]) r[a, b] = 1
    for (a in n) {
      if (a in done) continue
      group = a; size = 1; done[a]
      for (b in n) if (b != a && r[a, b] && r[b, a]) { group = group " " b; size++; done[b] }
      if (size == 1) continue
      split(group, m, " ")
      if (size == 2) {
        x = m[1]; y = m[2]; sub(/\.[ch]$/, "", x); sub(/\.[ch]$/, "", y)
        if (x == y) continue
      }
      printf "check_includes: an include circle of %d files: %s\n", size, group
      for (i = 1; i <= size; i++) for (j = 1; j <= size; j++)
        if ((m[i], m[j]) in e) printf "  %s -> %s (%s)\n", m[i], m[j], why[m[i], m[j]]
      bad = 1
    }
    exit bad
  }' "$work/edges" >&2 || fail=1

[ $fail -eq 0 ] && echo "check_includes: $(wc -l <"$work/seen") files, no circle but a header with its own source"
exit $fail

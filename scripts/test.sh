#!/usr/bin/env bash
# The project's tests on a fresh machine with gcc and Maven (README's test command; .ci/run runs it).
# Output: a line per module and test phase, a progress line after 30 s without one, the failures
# in full at the end; everything Maven printed is in target/test-logs/mvn.log.
# Arguments go to Maven (scripts/test.sh -T 1 builds one module at a time).
# The merge page's test renders it in headless Chromium: installed here from Debian's packages
# (without their recommended packages) when absent, as root or through sudo, or taken from $CHROMIUM.
set -euo pipefail
cd "$(dirname "$0")/.."
logs=target/test-logs
mkdir -p "$logs"
start=$SECONDS
said=$SECONDS
say() { printf 'test.sh [%02d:%02d] %s\n' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) "$*"; said=$SECONDS; }

if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then sudo=; elif command -v sudo >/dev/null 2>&1; then sudo=sudo; else
    echo "scripts/test.sh: headless Chromium is needed for the merge page's test and cannot be installed without root: install Debian's chromium package, or set CHROMIUM to a Chromium binary" >&2
    exit 2
  fi
  say "installing Debian's chromium without recommended packages (log: $logs/apt.log)"
  if ! { $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends chromium; } \
      >"$logs/apt.log" 2>&1; then
    cat "$logs/apt.log" >&2
    say "FAILED: chromium could not be installed (above)"
    exit 2
  fi
fi

# The linux-aarch64 library and its C tests under qemu-user (native-shim/pom.xml) need Debian's
# cross compiler and qemu-user-static: installed the same way when absent.
if ! scripts/aarch64-tools.sh >"$logs/aarch64-tools.log" 2>&1; then
  cat "$logs/aarch64-tools.log" >&2
  say "FAILED: the aarch64 cross compiler and qemu could not be installed (above)"
  exit 2
fi

# A line per module, per test phase and per test summary, every error line as it comes; a progress
# line when 30 s pass without one (Maven may print lines this shows none of: the C tests' own).
show() {
  local phase="starting" line rc
  while true; do
    IFS= read -r -t 30 line
    rc=$?
    if [ "$rc" -gt 128 ]; then # no line for 30 s
      say "... still at: $phase"
      continue
    fi
    [ "$rc" -eq 0 ] || break # the end of Maven's output
    case "$line" in
      *"[INFO] Building "*"["*/*"]"*)
        phase=$(sed -E 's/.*\[INFO\] Building (.*[^ ]) +\[([0-9]+\/[0-9]+)\].*/\2 \1/' <<<"$line")
        say "building $phase" ;;
      *"[INFO] --- "*)
        # the plugin executions worth a line: the C builds and tests, the tests, the sample builds
        if [[ "$line" =~ ---\ ([a-z-]*)(exec|surefire|failsafe|invoker)[a-z-]*:[^:]+:(exec|test|integration-test)\ \(([^\)]*)\)\ @\ ([^ ]+) ]]; then
          phase="${BASH_REMATCH[5]}: ${BASH_REMATCH[2]} ${BASH_REMATCH[4]}"
          say "$phase"
        fi ;;
      *"Tests run:"*" -- in "*) ;;
      *"[INFO] Tests run:"*|*"[WARNING] Tests run:"*|*"[ERROR] Tests run:"*) say "  ${line#\[*\] }" ;;
      *"[ERROR]"*|*"<<< FAILURE"*|*"<<< ERROR"*) printf '%s\n' "$line" ;;
      *"  Passed: "*|*".. FAILED"*|*".. SUCCESS"*) say "  ${line#\[*\] }" ;;
      *"[INFO] BUILD SUCCESS"*|*"[INFO] BUILD FAILURE"*) printf '%s\n' "$line" ;;
    esac
    [ $((SECONDS - said)) -lt 30 ] || say "... still at: $phase"
  done
}

# Two modules at a time where the reactor allows it: the samples build beside native-shim's C tests,
# and the plugin's, the JUnit extension's, micrometer's and bench's builds beside each other once
# the agent is built (the agent's own tests run alone). No colour, no download progress.
# Maven runs in the foreground of this script, piped: a command started with & in a script would
# have SIGINT ignored (POSIX, for asynchronous lists without job control), and so would every JVM
# it starts, which the tests of a SIGINT'ed application need to receive.
say "mvn -T 2 verify $* (log: $logs/mvn.log)"
set +e
mvn -B -ntp -Dstyle.color=never -T 2 verify "$@" 2>&1 | tee "$logs/mvn.log" | show
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  # the failed tests' own reports hold their whole stack traces and output
  mapfile -t failed < <(grep -l -E '<<< (FAILURE|ERROR)!' -- */target/surefire-reports/*.txt */target/failsafe-reports/*.txt 2>/dev/null || true)
  for f in "${failed[@]}"; do
    echo "===== $f"
    cat "$f"
  done
  echo "===== the end of $logs/mvn.log"
  tail -n 60 "$logs/mvn.log"
  say "FAILED: Maven exited with $status (the whole log: $logs/mvn.log)"
fi
[ "$status" -ne 0 ] || say "all tests passed"
exit "$status"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# exercises/grade says what is wrong with its command line before grading anything
# (issue 38): a mistyped --student path is a missing folder (it printed 36 "was DELETED"
# lines and exit status 3, a tampered tree), a folder that is no copy of towers says so,
# and a BUILD_DIR that does not exist or was never configured is a usage error naming it
# (exit status 2; it exited 1, "a test failed"). None of these builds or runs anything.
# No pipefail: `grep -q` may leave a pipe early; the tests check grep's answer only.
set -u
root=${1:?usage: grade_usage_test.sh <source dir>}
grade="$root/exercises/grade"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# expect NAME STATUS PATTERN ARGS...: grade ARGS exits with STATUS, prints a line matching
# PATTERN, and never reports a grader file as DELETED or a table of points.
expect() {
  local name=$1 status=$2 pattern=$3 got=0 out
  shift 3
  out=$("$grade" "$@" 2>&1) || got=$?
  if [ "$got" -ne "$status" ] || ! grep -qE -- "$pattern" <<<"$out" ||
     grep -qE "was DELETED|\| exercise \|" <<<"$out"; then
    echo "FAIL: $name: expected exit $status and a line matching '$pattern', got $got:"
    sed 's/^/    /' <<<"$out" | head -n 12
    failures=$((failures + 1))
  else
    echo "ok: $name: $(head -n1 <<<"$out" | cut -c1-150)"
  fi
}

expect "mistyped --student" 2 "^grade: --student $work/stdent: no such folder" \
  --check-only --student "$work/stdent"
expect "mistyped --student, grading" 2 "^grade: --student $work/stdent: no such folder" \
  --student "$work/stdent" "$work/build"
mkdir -p "$work/not-towers"
expect "--student not a copy of towers" 2 "no exercises/ folder there, so it is not a copy of towers" \
  --check-only --student "$work/not-towers"
expect "missing BUILD_DIR" 2 "^grade: BUILD_DIR $work/no-build does not exist\. Configure and build" \
  "$work/no-build"
expect "missing BUILD_DIR, no sanitizers" 2 "^grade: BUILD_DIR $work/no-build does not exist" \
  --sanitize none "$work/no-build"
mkdir -p "$work/empty"
expect "unconfigured BUILD_DIR" 2 "^grade: BUILD_DIR $work/empty is not a configured build folder" \
  --sanitize none "$work/empty"
expect "bad --sanitize" 2 "^grade: --sanitize tsan: give all, thread, address or none" \
  --sanitize tsan "$work/empty"
expect "--check-only alone" 2 "^grade: --check-only compares a student's tree" --check-only
expect "unknown option" 2 "^grade: unknown option --studnet" --studnet "$work/x" "$work/build"

[ "$failures" -eq 0 ] || { echo "FAIL: $failures case(s)"; exit 1; }
echo "PASS: exercises/grade names what is wrong with its command line, exit status 2"

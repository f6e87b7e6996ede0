#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/gpu-check for real (not --dry-run) in a copy of the scripts where nothing can be
# built, with stand-in chapter programs: what comes back of a device call is at most 8
# files, so each call leaves at most 4 in its output folder (report, checks, one archive
# of logs, and at most one temporary file), the report among them and whole, whatever
# happens: when steps fail, when the call is stopped (SIGTERM) or killed (SIGKILL) at any
# moment, and with both calls' files in one folder. To the end, a call reports every step
# (one log per step in the archive), names a program that was not built as one failure,
# lists what did not run for the docs' GPU tables (which read the report back), and
# exits non-zero. A build configured without MPI makes chapter 5 a skip that says so.
# No pipefail: `echo "$out" | grep -q` would fail whenever grep -q leaves at the first
# match while echo still writes (SIGPIPE), and the tests check grep's answer only.
set -u
root=${1:?usage: gpu_check_outputs_test.sh <source dir>}
root=$(cd "$root" && pwd)  # the test works in a copy: an absolute path
fail() { echo "FAIL: $*"; echo "--- output:"; echo "${out:-}"; exit 1; }
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
export TMPDIR=$copy/tmp  # what a killed call leaves behind stays inside the copy
mkdir -p "$TMPDIR"
cp -r "$root/scripts" "$copy/"
mkdir -p "$copy/bench" "$copy/chapters"
cp "$root/bench/torch_cifar10_gpu.py" "$copy/bench/"
for dir in "$root"/chapters/[0-9][0-9]_*/; do mkdir -p "$copy/chapters/$(basename "$dir")"; done
cd "$copy"

# Two stand-in chapter programs, as if built: chapter 0 runs and passes, chapter 2 fails;
# each takes a moment, so that a kill can land in the middle of a step.
mkdir -p "$copy/build-gpu/bin"
printf '#!/bin/sh\nsleep 1\necho "summary: mode=sync max_concurrent_towers=1"\necho "summary: mode=enqueue max_concurrent_towers=4"\n' \
  > "$copy/build-gpu/bin/00_streams"
printf '#!/bin/sh\nsleep 1\necho "error: a stand-in that fails"\nexit 3\n' > "$copy/build-gpu/bin/02_serial_towers"
chmod +x "$copy/build-gpu/bin/00_streams" "$copy/build-gpu/bin/02_serial_towers"

# The output folder of a finished or interrupted call: at most 4 files, the report whole.
check_folder() {
  local dir=$1 call=$2 when=$3 files
  files=$(find "$dir" -type f | wc -l)
  [ "$files" -le 4 ] || { out=$(ls -la "$dir"); fail "$when: $files files in call $call's folder"; }
  [ -f "$dir/call$call-report.md" ] || { out=$(ls -la "$dir"); fail "$when: no call$call-report.md"; }
  head -n1 "$dir/call$call-report.md" | grep -q "^# GPU check, call $call of 2" ||
    { out=$(cat "$dir/call$call-report.md"); fail "$when: the report does not start with its title"; }
  tail -n1 "$dir/call$call-report.md" | grep -q "^Wall time so far: " ||
    { out=$(cat "$dir/call$call-report.md"); fail "$when: the report is cut short"; }
}

# Stopped or killed at several moments of call 1: the folder is never over 4 files, and
# the report is always there and whole.
kills=0
for signal in TERM KILL; do
  for delay in 0.3 1 2.5 4; do
    rm -rf "$copy/killed"
    OUT= setsid scripts/gpu-check --call 1 --out "$copy/killed" > "$copy/killed.log" 2>&1 &
    pid=$!
    sleep "$delay"
    kill -"$signal" -- "-$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    check_folder "$copy/killed" 1 "call 1 sent SIG$signal after $delay s"
    kills=$((kills + 1))
  done
done
grep -q "^## env" "$copy/killed/call1-report.md" || { out=$(cat "$copy/killed/call1-report.md"); fail "killed: the report lacks the first step"; }

# Call 1 to the end: every step reported.
out=$(OUT= timeout 300 scripts/gpu-check --call 1 --out "$copy/out" 2>&1) && fail "call 1: exit 0 with nothing built"
check_folder "$copy/out" 1 "call 1 to the end"
[ ! -e "$copy/out/.call1-partial" ] || fail "call 1 left its temporary file"
steps=$(PATH="/usr/bin:/bin" scripts/gpu-check --dry-run --call 1 | grep -c '^step')
report=$copy/out/call1-report.md
[ "$(grep -c '^## ' "$report")" -ge "$steps" ] || fail "call1-report.md has fewer than $steps steps"
logs=$(tar -tzf "$copy/out/call1-logs.tar.gz" | grep -c '^logs/[0-9][0-9]-.*\.log$')
[ "$logs" -eq "$steps" ] || fail "$logs logs in the archive for $steps steps"
grep -q "^## Checks" "$report" || fail "no table of checks"
grep -qP "^fail\tchapters 0-3[^\t]*\tChapter 3: .*03_stream_towers was not built$" "$copy/out/call1-checks.tsv" ||
  fail "a missing program is not named as a failure"
grep -q "rendezvous=met" "$copy/out/call1-checks.tsv" && fail "checks of a program that never ran were recorded"
# The page docs/proofs.md's GPU table is made from (docs/_ext/towers_pages.py): a title
# "# GPU check", a "| area | tests |" table of what passed, and what did not under
# "## Not run on a GPU", each failure named.
grep -qE '^\| area \| tests \|$' "$report" || fail "no '| area | tests |' table"
grep -q "^## Not run on a GPU$" "$report" || fail "no 'Not run on a GPU' section"
sed -n '/^## Not run on a GPU$/,/^## /p' "$report" |
  grep -q "^- failed: .*03_stream_towers was not built" || fail "a failure is missing from 'Not run on a GPU'"
table=$(python3 "$root/docs/_ext/towers_gpu_status.py" "$copy/out" "$copy/chapters" 2>&1) || { out=$table;
  fail "towers_gpu_status.py failed on the report"; }
today=$(date -u +%Y-%m-%d)
echo "$table" | grep -qF "| 00_streams | $today | passed |" ||
  { out=$table; fail "chapter 0's stand-in passed, the table says otherwise"; }
echo "$table" | grep -qF "| 02_serial_towers | $today | failed: 1 of 1 runs (exit 3) |" ||
  { out=$table; fail "chapter 2's stand-in failed, the table says otherwise"; }
echo "$table" | grep -qF "| 03_stream_towers | never | only compiled |" ||
  { out=$table; fail "chapter 3 was not built, yet the table says it ran"; }

# Call 2 into the same folder, with a toolchain that configures without MPI and builds
# nothing: both calls' files, at most 8; chapter 5 a skip naming the missing MPI.
mkdir -p "$copy/fake"
printf '#!/bin/sh\ncase "$1" in --preset) echo "-- towers: CUDA backend ON; MPI OFF; tests ON";; esac\nexit 0\n' \
  > "$copy/fake/cmake"
printf '#!/bin/sh\nfor t in 07_graph bench_train bench_towers bench_allreduce bench_input bench_graph bench_globaltimer_tick test_cuda_ledger; do echo "$t: phony"; done\n' \
  > "$copy/fake/ninja"
chmod +x "$copy/fake/cmake" "$copy/fake/ninja"
out=$(OUT= PATH="$copy/fake:$PATH" timeout 300 scripts/gpu-check --call 2 --out "$copy/out" 2>&1) &&
  fail "call 2: exit 0 with nothing built"
[ "$(find "$copy/out" -type f | wc -l)" -le 8 ] || { out=$(ls -la "$copy/out"); fail "more than 8 files for both calls"; }
[ -f "$copy/out/call1-report.md" ] && [ -f "$copy/out/call2-report.md" ] || fail "a call's report is missing"
tail -n1 "$copy/out/call2-report.md" | grep -q "^Wall time so far: " || fail "call 2's report is cut short"
grep -qP "^skip\tchapter 5 under mpiexec[^\t]*\tChapter 5: .*05_ranks is not in this build: configure found no MPI" \
  "$copy/out/call2-checks.tsv" || { out=$(cat "$copy/out/call2-checks.tsv"); fail "a build without MPI is not a skip naming it"; }
grep -qP "^fail\t.*05_ranks" "$copy/out/call2-checks.tsv" && { out=$(cat "$copy/out/call2-checks.tsv"); fail "a missing MPI counted as a failure"; }
echo "PASS: $kills stops and kills of call 1 left at most 4 files and a whole report; both calls to the end, $(find "$copy/out" -type f | wc -l) files"

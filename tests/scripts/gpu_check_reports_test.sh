#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/gpu-check for real (not --dry-run) where nothing can be built, in a copy of the
# scripts (two stand-in chapter programs aside): it still goes through every step, writes results.md, checks.tsv and one log per
# step to --out, names each program that was not built as one failure (no cascade of
# checks), lists what did not run for the docs' GPU table, and exits non-zero. Killed during its first step it has already written the
# report so far: a lease that ends mid-run still returns what was measured.
# No pipefail: `echo "$out" | grep -q` would fail whenever grep -q leaves at the first
# match while echo still writes (SIGPIPE), and the tests check grep's answer only.
set -u
root=${1:?usage: gpu_check_reports_test.sh <source dir>}
root=$(cd "$root" && pwd)  # the test works in a copy: an absolute path
fail() { echo "FAIL: $*"; echo "--- output:"; echo "${out:-}"; exit 1; }
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -r "$root/scripts" "$copy/"
mkdir -p "$copy/bench" "$copy/chapters"
cp "$root/bench/globaltimer_tick.cu" "$root/bench/torch_cifar10_gpu.py" "$copy/bench/"
for dir in "$root"/chapters/[0-9][0-9]_*/; do mkdir -p "$copy/chapters/$(basename "$dir")"; done
cd "$copy"

# Killed during the first step (setsid: the whole process group, compiler included).
setsid scripts/gpu-check --out "$copy/killed" > "$copy/killed.log" 2>&1 &
pid=$!
sleep 2
kill -TERM -- "-$pid" 2>/dev/null
wait "$pid" 2>/dev/null
[ -f "$copy/killed/results.md" ] || { out=$(cat "$copy/killed.log"); fail "killed in step 1: no results.md"; }
grep -q "^## env" "$copy/killed/results.md" || { out=$(cat "$copy/killed/results.md"); fail "killed in step 1: the report lacks the step"; }

# Two stand-in chapter programs, as if built: chapter 0 runs and passes, chapter 2 fails.
# The docs' per-chapter GPU table (docs/_ext/towers_gpu_status.py) must read both from
# the report, and every other chapter as only compiled.
mkdir -p "$copy/build-gpu/bin"
printf '#!/bin/sh\necho "summary: mode=sync max_concurrent_towers=1"\necho "summary: mode=enqueue max_concurrent_towers=4"\n' \
  > "$copy/build-gpu/bin/00_streams"
printf '#!/bin/sh\necho "error: a stand-in that fails"\nexit 3\n' > "$copy/build-gpu/bin/02_serial_towers"
chmod +x "$copy/build-gpu/bin/00_streams" "$copy/build-gpu/bin/02_serial_towers"

# To the end: every step reported.
out=$(OUT= timeout 300 scripts/gpu-check --out "$copy/out" 2>&1) && fail "exit 0 with nothing built"
steps=$(PATH="/usr/bin:/bin" scripts/gpu-check --dry-run | grep -c '^step')
[ "$(grep -c '^## ' "$copy/out/results.md")" -ge "$steps" ] || fail "results.md has fewer than $steps steps"
[ "$(ls "$copy"/out/[0-9][0-9]-*.log | wc -l)" -eq "$steps" ] || fail "not one log per step"
grep -q "^## Checks" "$copy/out/results.md" || fail "no table of checks"
grep -qP "^fail\tchapters 0-3[^\t]*\tChapter 3: .*03_stream_towers was not built$" "$copy/out/checks.tsv" ||
  fail "a missing program is not named as a failure"
grep -q "rendezvous=met" "$copy/out/checks.tsv" && fail "checks of a program that never ran were recorded"
# The page docs/proofs.md's GPU table is made from (docs/_ext/towers_pages.py): a title
# "# GPU check", a "| area | tests |" table of what passed, and what did not under
# "## Not run on a GPU", each failure named.
head -n1 "$copy/out/results.md" | grep -q "^# GPU check" || fail "results.md does not start with '# GPU check'"
grep -qE '^\| area \| tests \|$' "$copy/out/results.md" || fail "no '| area | tests |' table"
grep -q "^## Not run on a GPU$" "$copy/out/results.md" || fail "no 'Not run on a GPU' section"
sed -n '/^## Not run on a GPU$/,/^## /p' "$copy/out/results.md" |
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
echo "PASS: killed in step 1, results.md kept; $steps steps reported to the end"

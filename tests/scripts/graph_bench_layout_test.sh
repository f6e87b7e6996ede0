#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/gpu-bench.d/2-90-graph.sh's bench_graph command, run on the host backend with 2
# steps: every tower count runs (1 tower with --towers-per-device 8 was refused, so the
# GPU check's one graph check died on its first row), and a count that would part-fill a
# device is refused before any row runs, saying what to give instead.
# No pipefail: `echo "$out" | grep -q` would fail whenever grep -q leaves at the first
# match while echo still writes (SIGPIPE), and the tests check grep's answer only.
set -u
root=${1:?usage: graph_bench_layout_test.sh <source dir> <bench_graph>}
bench=${2:?usage: graph_bench_layout_test.sh <source dir> <bench_graph>}
fail() { echo "FAIL: $*"; echo "--- output:"; echo "${out:-}"; exit 1; }
# The arguments after bench_graph in the script (joined across its continuation lines).
args=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$root/scripts/gpu-bench.d/2-90-graph.sh" |
       sed -nE 's/.*\$bin\/bench_graph (.*)$/\1/p' | head -n1)
[ -n "$args" ] || fail "no bench_graph command in 2-90-graph.sh"
echo "$args" | grep -q -- "--backend cuda" || fail "2-90-graph.sh does not run on cuda: $args"
host_args=$(echo "$args" | sed -E 's/--backend cuda/--backend host/; s/--steps [0-9]+/--steps 2/')
# shellcheck disable=SC2086
out=$("$bench" $host_args 2>&1) || fail "exit status $? for: bench_graph $host_args"
rows=$(echo "$out" | grep -cE '^ +[0-9]+ ')
expected=$(echo "$args" | sed -nE 's/.*--towers (([0-9]+ )+).*/\1/p' | wc -w)
[ "$rows" -eq "$expected" ] || fail "$rows rows for $expected tower counts"
echo "$out" | grep -qE "^summary:.* wrong=0" || fail "no summary with wrong=0"
out=$("$bench" --backend host --towers 1 6 --towers-per-device 4 --steps 2 2>&1)
status=$?
[ $status -eq 2 ] || fail "6 towers at 4 per device: exit $status, expected 2 (a usage error)"
echo "$out" | grep -q -- "--towers 6 does not fill devices of 4" || fail "no reason given"
echo "$out" | grep -qE '^ +1 ' && fail "a row ran before the bad count was refused"
echo "PASS: bench_graph $host_args: $rows rows, wrong=0"

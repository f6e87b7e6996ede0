#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/flake-hunt finds what it is for. In a build folder of stand-in tests (one that
# fails only on its third run, one that always passes, two parameterised ones named as
# gtest_discover_tests names them, failing always and on their second run, and ten
# parameterised ones that pass: a selection no single ctest regex could anchor), 10 runs
# each list the three failing tests by name, with the runs that passed first, run every
# test ten times, and exit 1; --from chooses the names of a file and nothing else; the
# passing one alone exits 0; a folder that is no build is a usage error (2) saying so.
set -uo pipefail
root=${1:?usage: flake_hunt_test.sh <source dir>}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cat >"$tmp/CTestTestfile.cmake" <<CTEST
add_test(Stand.SometimesFails "bash" "-c" "n=\$(cat $tmp/runs 2>/dev/null || echo 0); echo \$((n + 1)) >$tmp/runs; [ \$n -ne 2 ]")
add_test(Stand.AlwaysPasses "true")
add_test([=[Stand/Param.AlwaysFails/host  # GetParam() = host]=] "false")
add_test([=[Stand/Param.SometimesFails/host  # GetParam() = host]=] "bash" "-c" "n=\$(cat $tmp/pruns 2>/dev/null || echo 0); echo \$((n + 1)) >$tmp/pruns; [ \$n -ne 1 ]")
CTEST
# Ten more parameterised stand-ins: a selection far beyond what one ctest regex can anchor.
for i in $(seq 10); do
  echo "add_test([=[Stand/Many.Passes/$i  # GetParam() = $i]=] \"bash\" \"-c\" \"echo x >>$tmp/many\")" >>"$tmp/CTestTestfile.cmake"
done
out=$("$root/scripts/flake-hunt" --build "$tmp" -R 'Stand' --runs 10 --no-load 2>&1); rc=$?
echo "$out"
[ "$rc" -eq 1 ] || fail "exit $rc with failing tests, expected 1"
grep -q "^  Stand.SometimesFails (passed 2 run(s) before failing)" <<<"$out" ||
  fail "the test that fails on its third run is not listed so"
grep -q "^  Stand/Param.AlwaysFails/host (passed 0 run(s)" <<<"$out" || fail "the failing test is not listed"
# gtest_discover_tests names a parameterised test "Suite/Test.Name/param  # GetParam() = param":
# the hunt must run it (an anchor at the bare name dropped every such test once).
grep -q "^  Stand/Param.SometimesFails/host (passed 1 run(s) before failing)" <<<"$out" ||
  fail "the parameterised test that fails on its second run is not listed so"
[ "$(cat "$tmp/pruns")" = 2 ] || fail "the parameterised test ran $(cat "$tmp/pruns") time(s), expected 2"
grep -q "AlwaysPasses" <<<"$(sed -n '/tests that failed/,$p' <<<"$out")" && fail "a passing test is listed"
grep -q "flake-hunt: 14 test(s), 10 run(s) each" <<<"$out" || fail "not all 14 stand-ins were chosen"
[ "$(wc -l <"$tmp/many")" = 100 ] || fail "the ten passing parameterised stand-ins ran $(wc -l <"$tmp/many") times, expected 100"
# --from: the names of a file, as --list prints them, and nothing else.
printf 'Stand.AlwaysPasses\nStand/Many.Passes/3\nNo.SuchTest\n' >"$tmp/names"
out=$("$root/scripts/flake-hunt" --build "$tmp" --from "$tmp/names" --list 2>&1); rc=$?
[ "$rc" -eq 0 ] && [ "$out" = $'Stand.AlwaysPasses\nStand/Many.Passes/3' ] || fail "--from chose: $out"
out=$("$root/scripts/flake-hunt" --build "$tmp" -R 'AlwaysPasses' --runs 3 --no-load 2>&1); rc=$?
[ "$rc" -eq 0 ] || fail "exit $rc when every run passed: $out"
grep -q "0 failures: 1 test(s) passed 3 run(s) each" <<<"$out" || fail "no success line: $out"
out=$("$root/scripts/flake-hunt" --build "$tmp/none" 2>&1); rc=$?
[ "$rc" -eq 2 ] && grep -q "is not a build folder" <<<"$out" || fail "a missing folder: exit $rc: $out"
echo "flake-hunt lists the failing tests, passes the passing one, refuses a folder that is no build"

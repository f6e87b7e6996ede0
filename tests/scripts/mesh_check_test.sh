#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/mesh-check finds what it is for. With a stand-in 11_mesh whose plan lists three
# meshes of 2 devices (one run whose gradients' peak differs from its plan by a byte, one
# the composed run refuses as planned, one that fails), it lists the difference by key,
# the refusal as "planned, not run", the failure with its exit status, counts them in its
# summary, and exits 1; the same stand-in telling the truth exits 0; values it cannot use
# are usage errors (2) naming them, before any run. Then the real 11_mesh for every mesh
# of 2 devices at ZeRO-0 with SGD: all match. Needs mpiexec (else skipped, 77).
set -uo pipefail
root=${1:?usage: mesh_check_test.sh <source dir> <bin dir>}
bin=${2:?bin dir}
command -v mpiexec >/dev/null || { echo "SKIPPED: no mpiexec"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
check=$root/scripts/mesh-check

mkdir "$tmp/bin"
# The stand-in: --plan --shapes prints three meshes as 11_mesh does; a run prints, on rank
# 0, a summary whose measured keys equal its plan's, but for 2x1x1, whose gradients' peak
# is one byte more when $tmp/lie exists; 1x2x1 is refused as 11_mesh refuses a mesh it
# only plans; 1x1x2 ends with exit 1.
cat >"$tmp/bin/11_mesh" <<EOF
#!/usr/bin/env bash
case " \$* " in
  *" --plan "*) printf 'every mesh of 2 device(s) the plan accepts:\n  dp x tp x pp   sum\n  2x1x1   10\n  1x2x1   10\n  1x1x2   10\nsummary: devices=2 shapes=3\n'; exit 0 ;;
  *" --tp 2 "*) echo "error: --optimizer adam is planned, not run: add --plan" >&2; exit 2 ;;
  *" --pp 2 "*) echo "rank 1 failed" >&2; exit 1 ;;
esac
[ "\${OMPI_COMM_WORLD_RANK:-0}" = 0 ] || exit 0
grads=200; [ -e "$tmp/lie" ] && grads=201
echo "summary: mesh=2x1x1 plan_parameters_bytes=100 plan_gradients_bytes=200 plan_other_bytes=0 plan_sum_bytes=300 plan_wire_data_bytes_per_step=400 plan_wire_tensor_bytes_per_step=0 plan_wire_bytes_per_step=400 peak_parameters_bytes=100 peak_gradients_bytes=\$grads wire_data_bytes_per_step=400 wire_tensor_bytes_per_step=0 wire_bytes_per_step=400"
EOF
chmod +x "$tmp/bin/11_mesh"
stand_in=(--devices 2 --zero 0 --optimizers sgd --schedules 1f1b --bin "$tmp/bin")

touch "$tmp/lie"
out=$("$check" "${stand_in[@]}" 2>&1); rc=$?
echo "$out"
[ "$rc" -eq 1 ] || fail "exit $rc with a mesh that differs and one that fails, expected 1"
grep -q "DIFFERS .*--dp 2 --tp 1 --pp 1 .*peak_gradients_bytes=201 plan 200" <<<"$out" ||
  fail "the gradients' peak one byte off the plan is not named"
grep -q "planned, not run  n=2 --dp 1 --tp 2" <<<"$out" || fail "the refused mesh is not listed as planned"
grep -q "FAILED (exit 1)  n=2 --dp 1 --tp 1 --pp 2 .*--schedule 1f1b" <<<"$out" || fail "the failed run is not listed"
grep -q "rank 1 failed" <<<"$out" || fail "the failed run's output is not shown"
grep -q "^summary: runs=2 matched=0 differ=1 failed=1 not_run=1$" <<<"$out" || fail "wrong summary"

rm "$tmp/lie"
out=$("$check" "${stand_in[@]}" 2>&1); rc=$?
[ "$rc" -eq 1 ] || fail "exit $rc with the failing run left, expected 1: $out"
grep -q "matches           n=2 --dp 2 --tp 1 --pp 1" <<<"$out" || fail "the truthful run does not match: $out"
out=$("$check" "${stand_in[@]}" --schedules gpipe 2>&1)
grep -q "^summary: runs=2 matched=1 differ=0 failed=1 not_run=1$" <<<"$out" || fail "wrong summary: $out"

for bad in "--zero 4:--zero: '4' is not a ZeRO stage" "--optimizers sdg:--optimizers: 'sdg' is not sgd" \
           "--devices 0:--devices: '0' is not a device count" "--schedules 2f2b:--schedules: '2f2b'" \
           "--bin $tmp/none:no $tmp/none/11_mesh; build it" "--zero:--zero needs a value" \
           "--frobnicate:unknown argument '--frobnicate'" "--devices ' ':an empty list"; do
  args=${bad%%:*} said=${bad#*:}
  out=$(eval "\"$check\" --bin \"$tmp/bin\" $args" 2>&1); rc=$?
  [ "$rc" -eq 2 ] && grep -qF -- "$said" <<<"$out" || fail "$args: exit $rc, expected 2 and '$said': $out"
  grep -q "matches\|FAILED\|DIFFERS" <<<"$out" && fail "$args: ran something before refusing: $out"
done

# The real 11_mesh: every mesh of 2 devices runs at ZeRO-0 with SGD, and each holds its plan.
out=$("$check" --devices 2 --zero 0 --optimizers sgd --bin "$bin" 2>&1); rc=$?
echo "$out"
[ "$rc" -eq 0 ] || fail "the real 11_mesh: exit $rc"
grep -q "^summary: runs=4 matched=4 differ=0 failed=0 not_run=0$" <<<"$out" ||
  fail "2x1x1, 1x2x1 and 1x1x2 (1F1B and GPipe) did not all run and match"
echo "mesh-check: a difference of one byte, a refusal and a failure each found; every 2-device mesh matches"

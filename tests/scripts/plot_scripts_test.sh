#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/plot_overlap.py and bench/plot_sharded.py fail as the programs do (issue 38): each
# mistake gets one line saying what was wrong and what to do, never a Python traceback;
# --svg is refused when it is a symbolic link (it wrote through onto the link's target), a
# folder or in a missing folder; a write that fails is exit status 1; and a table's `inf`
# (bench_sharded's unlimited link, an on/expect over zero) is read, not skipped.
# No pipefail: `grep -q` may leave a pipe early; the tests check grep's answer only.
set -u
root=${1:?usage: plot_scripts_test.sh <source dir>}
command -v python3 >/dev/null || { echo "SKIPPED: no python3"; exit 77; }
overlap="$root/bench/plot_overlap.py" sharded="$root/bench/plot_sharded.py"
overlap_md="$root/bench/results/2026-12-01-host-2core-overlap.md"
sharded_md="$root/bench/results/2026-12-03-host-2core-sharded-all-stages.md"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
failures=0

# expect NAME STATUS PATTERN COMMAND...: COMMAND exits with STATUS, says a line matching
# PATTERN on stderr (PATTERN "-": says nothing there), and no traceback.
expect() {
  local name=$1 status=$2 pattern=$3 got=0 said
  shift 3
  "$@" >"$work/out" 2>"$work/err" || got=$?
  if [ "$pattern" = - ]; then [ ! -s "$work/err" ]; else grep -qE -- "$pattern" "$work/err"; fi
  said=$?
  if [ "$got" -ne "$status" ] || [ "$said" -ne 0 ] || grep -q Traceback "$work/err"; then
    echo "FAIL: $name: expected exit $status and a line matching '$pattern', got $got:"
    sed 's/^/    /' "$work/err"
    failures=$((failures + 1))
  else
    echo "ok: $name: $(head -c 160 "$work/err")"
  fi
}

for script in "$overlap" "$sharded"; do
  name=$(basename "$script" .py)
  table=$([ "$name" = plot_overlap ] && echo "$overlap_md" || echo "$sharded_md")
  expect "$name: missing results" 2 "^$name: cannot read no-such.md \(No such file" \
    python3 "$script" no-such.md --svg out.svg
  expect "$name: results is a folder" 2 "^$name: $work is a folder; give a results file" \
    python3 "$script" "$work" --svg out.svg
  printf '\xff\xfe\x00' >binary.md
  expect "$name: results not text" 2 "^$name: binary.md is not text" \
    python3 "$script" binary.md --svg out.svg
  echo "no table here" >empty.md
  expect "$name: no rows" 2 "^$name: no bench_.* table rows in empty.md; give" \
    python3 "$script" empty.md --svg out.svg
  expect "$name: --svg in a missing folder" 2 "^$name: --svg no/such/out.svg: its folder no/such does not exist" \
    python3 "$script" "$table" --svg no/such/out.svg
  mkdir -p a-folder
  expect "$name: --svg a folder" 2 "^$name: --svg a-folder: is a folder, not a file" \
    python3 "$script" "$table" --svg a-folder
  # The link's target keeps its bytes: the chart once replaced them.
  echo precious >target.txt
  ln -sf target.txt link.svg
  expect "$name: --svg a symbolic link" 2 "^$name: --svg link.svg: is a symbolic link \(to target.txt\)" \
    python3 "$script" "$table" --svg link.svg
  [ "$(cat target.txt)" = precious ] || { echo "FAIL: $name wrote through the link"; failures=$((failures + 1)); }
  ln -sf gone.svg dangling.svg
  expect "$name: --svg a dangling link" 2 "whose target does not exist" \
    python3 "$script" "$table" --svg dangling.svg
  [ -e gone.svg ] && { echo "FAIL: $name made the dangling link's target"; failures=$((failures + 1)); }
  expect "$name: a full disk" 1 "^$name: cannot write /dev/full \(No space left on device\)" \
    python3 "$script" "$table" --svg /dev/full
  # A chart stays whole, and a link to a device is written in place, as the programs do.
  expect "$name: writes a chart" 0 - python3 "$script" "$table" --svg "chart dir.svg"
  grep -q "</svg>" "chart dir.svg" || { echo "FAIL: $name: no chart written"; failures=$((failures + 1)); }
  ln -sf /dev/null to-null.svg
  expect "$name: a link to a device" 0 - python3 "$script" "$table" --svg to-null.svg
  # --check names the command that redraws it, quoted for the shell.
  echo stale >"chart dir.svg"
  expect "$name: stale chart" 1 "regenerate it: .*--svg 'chart dir.svg'" \
    python3 "$script" "$table" --svg "chart dir.svg" --check
done

# bench_sharded writes an unlimited link (--links 0) as `inf` Gb/s: such a table is read
# and drawn (its rows were skipped, and a table of them alone had "no rows").
awk '/^  [a-z]+ +[0-3] +[0-9]+ +10 / { sub(/ 10 /, " inf "); print }' "$sharded_md" >unlimited.md
[ -s unlimited.md ] || { echo "FAIL: no rows to turn into inf rows"; failures=$((failures + 1)); }
expect "plot_sharded: inf Gb/s rows" 0 - python3 "$sharded" unlimited.md --svg unlimited.svg
grep -q "<polyline" unlimited.svg || { echo "FAIL: no lines drawn from inf rows"; failures=$((failures + 1)); }
# An on/expect over zero is inf; it is not drawn, so its row is: a NaN step time is not.
awk '/^ +[0-9.]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +-?[0-9.]+% / { $9 = "inf" } { print }' \
  "$overlap_md" >ratio.md
grep -qE ' inf ' ratio.md || { echo "FAIL: no inf ratio written"; failures=$((failures + 1)); }
expect "plot_overlap: inf on/expect" 0 - python3 "$overlap" ratio.md --svg ratio.svg
grep -c "<rect" ratio.svg >/dev/null || { echo "FAIL: no bars drawn"; failures=$((failures + 1)); }
awk '/^ +[0-9.]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +-?[0-9.]+% / && !done { $5 = "nan"; done = 1 } { print }' \
  "$overlap_md" >nan.md
expect "plot_overlap: nan step time" 2 "^plot_overlap: nan.md:[0-9]+: on\(ms\) is nan, which a chart cannot draw" \
  python3 "$overlap" nan.md --svg nan.svg

[ "$failures" -eq 0 ] || { echo "FAIL: $failures case(s)"; exit 1; }
echo "PASS: both plot scripts fail in one line, refuse links and read inf"

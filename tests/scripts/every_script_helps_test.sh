#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every script a user runs answers --help: exit 0, a few lines that say what it does, within
# seconds, and nothing else happens (no install, no build, no file left in the tree). Run
# on a copy of the tree's scripts so a script that does act cannot touch the checkout.
set -euo pipefail
source_dir=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/tree"
cp -r "$source_dir/scripts" "$source_dir/exercises" "$scratch/tree/"
before=$(cd "$scratch/tree" && find . -type f | sort | sha256sum)
failures=0
for script in "$scratch"/tree/scripts/* "$scratch"/tree/exercises/*; do
  [ -f "$script" ] && [ -x "$script" ] || continue
  name=${script#"$scratch/tree/"}
  rc=0
  out=$(cd "$scratch/tree" && timeout 20 "$script" --help 2>&1) || rc=$?
  lines=$(printf '%s\n' "$out" | grep -c . || true)
  if [ "$rc" -ne 0 ] || [ "$lines" -lt 2 ]; then
    echo "FAIL $name --help: exit $rc, $lines line(s):"
    printf '%s\n' "$out" | head -5 | sed 's/^/    /'
    failures=$((failures + 1))
  else
    echo "ok   $name --help ($lines lines)"
  fi
done
after=$(cd "$scratch/tree" && find . -type f | sort | sha256sum)
if [ "$before" != "$after" ]; then
  echo "FAIL a --help created or removed files in the tree"
  failures=$((failures + 1))
fi
[ "$failures" -eq 0 ]

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/env.sh sets OPENBLAS_CORETYPE only where that is safe (issue 41): for each CPU of
# tests/ops/openblas_cores.tsv (the table host::best_openblas_core is tested on) its
# towers_openblas_coretype gives the same core from AVX2 up and nothing below; sourced, it
# keeps a value already set, and on this machine sets what the function gives for this
# CPU's own /proc/cpuinfo, under bash and under a POSIX sh. Seconds.
set -u
root=${1:?usage: openblas_coretype_test.sh <source dir>}
table="$root/tests/ops/openblas_cores.tsv"
failures=0 cases=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# shellcheck source=../../scripts/env.sh
export OPENBLAS_CORETYPE=keep
source "$root/scripts/env.sh"
[ "$OPENBLAS_CORETYPE" = keep ] || fail "env.sh replaced OPENBLAS_CORETYPE=keep by $OPENBLAS_CORETYPE"
unset OPENBLAS_CORETYPE

while IFS=$'\t' read -r vendor flags expected what; do
  case "$vendor" in '#'*) continue ;; esac
  cases=$((cases + 1))
  case "$expected" in
    Haswell|Zen|SkylakeX|Cooperlake) want=$expected ;;
    *) want= ;;  # below AVX2: env.sh leaves the library's choice alone
  esac
  # shellcheck disable=SC2086  # the flags are words
  got=$(towers_openblas_coretype "$vendor" $flags)
  [ "$got" = "$want" ] || fail "$what: env.sh gives '$got', expected '$want'"
done <"$table"
[ "$cases" -ge 10 ] || fail "read only $cases cases from $table"

if [ "$(uname -m)" = x86_64 ] && [ -r /proc/cpuinfo ]; then
  vendor=$(sed -n '/^vendor_id/{s/^[^:]*: *//p;q;}' /proc/cpuinfo)
  # shellcheck disable=SC2046
  here=$(towers_openblas_coretype "$vendor" $(sed -n '/^flags/{s/^[^:]*: *//p;q;}' /proc/cpuinfo))
  for shell in bash sh; do
    got=$(env -u OPENBLAS_CORETYPE "$shell" -c '. "$1/scripts/env.sh"; echo "${OPENBLAS_CORETYPE:-}"' \
          "$shell" "$root")
    [ "$got" = "$here" ] || fail "$shell: env.sh set OPENBLAS_CORETYPE='$got' on this CPU, expected '$here'"
  done
fi

if [ "$failures" -gt 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "ok: $cases CPUs of the table, a set value kept, this machine's (${here:-none}) set by bash and sh"

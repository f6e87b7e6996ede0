#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ctest -L two-hosts: chapters 5, 6 and 11 across two "machines" made by scripts/two-hosts (two network
# namespaces and a veth pair), one rank on each, as a learner runs it. Each case makes its
# own pair (its own TWO_HOSTS_PREFIX, so cases may run at once), bounds every run with
# timeout, and removes the pair on any exit. Exit 77 (ctest: Skipped) with the reason when
# this machine cannot make namespaces.
#   bits    chapter 5's and chapter 6's (06_overlap_ranks) --save-params across the cable
#           (shaped to 1 Gb/s; with 2 % loss where nft exists) equal chapter 5 on one
#           machine and one-process chapter 6, byte for byte
#   bytes   bytes the cable carried per step (its counters; steps 5 minus steps 1, /4)
#           against the all-reduce's 2(N-1)/N x 4 x 1,068,298 each way, overhead 0-2 % (measured 0.17 %)
#   kill    a rank on the second machine killed (SIGKILL) ends the job naming it and its node
#   cut     the cable cut for good mid-run ends the job within 30 s naming the lost node
#   outage  the cable cut for 2 s mid-run (well inside the keepalive's ~8 s) and mended: the
#           job survives, and its --save-params equal a run without the outage, byte for byte
#   daemon  the second machine's Open MPI daemon killed mid-run ends the job within 30 s,
#           naming the lost node (its rank is not killed by us: the daemon's loss is enough)
#   refuse  what up and run refuse, before changing anything: a rate tc cannot take
#           (100000gbit), a rate or loss tc or nft refuses on one end only (stand-ins for
#           them on PATH) leaves both ends and `status` as they were; --loss 08 is 8; a
#           program that is not there or not a file is named
#   loss    a job over a 30 % lossy link ends (a collective timeout or a lost daemon), and
#           run says it was the packet loss, not a cut, and what to do
#   link    bench/two-hosts-link at 100mbit (its fit below the link model's 0.1 Gb/s: it
#           exited 2 without a word) fills the measured columns, marks the simulated ones
#           n/a with a note, and goes on to 1gbit; a bad --rates is refused before any run.
#           The all-reduce bench and chapter 6's ranks are stand-ins that print a
#           table and a summary at once (the real ones take minutes at 100mbit); the
#           simulated link is the real 06_overlap
#   mesh    chapter 11's meshes across the cable: with one rank a machine, a 1-D mesh's one
#           dimension crosses; with two, a 2x2x1 or 2x1x2 mesh sends only its data
#           dimension across. The cable's bytes per step equal the run's count for the
#           dimension that crosses, within -1 to 5 % (headers; measured -0.4 to 2 %); the
#           meshes' --save-params equal one machine's, byte for byte
set -uo pipefail
root=${1:?usage: two_hosts_test.sh <source dir> <bin dir> <case>}
bin=${2:?bin dir}
case_name=${3:?case}
script="$root/scripts/two-hosts"
export TWO_HOSTS_PREFIX="tht-$case_name"
small="--backend host --batch-size 8 --log-every 1"
tmp=$(mktemp -d /tmp/two-hosts-test.XXXXXX)

# Output is searched with grep -q <<<"$out", never echo "$out" | grep -q: under pipefail,
# grep -q leaving at its match while echo still writes (output past 4 KiB) fails the
# pipeline with SIGPIPE, and the search "fails" on a line that is there (the flake hunt
# caught the kill and daemon cases so, 1 run in 8 and 1 in 5).
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
cleanup() { "$script" down >/dev/null 2>&1; rm -rf "$tmp"; }

[ "$(id -u)" -eq 0 ] || skip "not root: scripts/two-hosts needs root to make network namespaces"
command -v ip >/dev/null || skip "no ip command (iproute2)"
ip netns list >/dev/null 2>&1 || skip "this kernel or container does not allow network namespaces"
command -v mpirun >/dev/null || skip "no mpirun"
trap cleanup EXIT

# What the jobs' processes are doing (state, kernel wait channel, age): a hang in Open MPI's
# wire-up, in a collective, at MPI_Finalize or in a blocked write reads differently here.
job_processes() {
  ps -eo pid,ppid,stat,wchan:24,etime,pcpu,args |
    grep -E "[0]5_ranks|[0]6_overlap|[1]1_mesh|[o]rted|[p]rted|[m]pirun|[t]wo-hosts" | cut -c1-200
}
# Where each rank waits (every thread's stack, where gdb is installed: scripts/setup adds
# it) and what each machine's TCP sockets hold (ss: queued bytes, retransmits): a rank
# blocked in MPI with its bytes stuck on the cable reads otherwise than one that never
# got there.
job_stacks() {
  local pid n
  if command -v gdb >/dev/null; then
    for pid in $(pgrep -x '05_ranks|06_overlap_rank|11_mesh'); do
      echo "--- $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-150)"
      timeout 10 gdb -p "$pid" -batch -ex "thread apply all bt 12" 2>/dev/null | grep -E "^Thread|^#"
    done
  else
    echo "(no gdb here: no stacks)"
  fi
  for n in 0 1; do
    echo "--- TCP sockets on $TWO_HOSTS_PREFIX-host$n"
    ip netns exec "$TWO_HOSTS_PREFIX-host$n" ss -tin 2>&1
  done
}
# Runs a command bounded by `timeout`; its output (stdout and stderr) in $out, status in $rc.
# When the time runs out (rc 124), $out ends with the processes as they were shortly
# before (a second; 20 s for a bound of a minute or more, time for the stacks): a job that
# hung says where (a mesh run across the cable once hung after its summary, 1 run in 12
# under load, and once in its last barrier).
bounded() {
  local seconds=$1; shift
  local lead=1
  [ "$seconds" -ge 60 ] && lead=20
  rm -f "$tmp/processes"
  # The watcher keeps no descriptor of the test's (ctest waits for its output to close).
  ( sleep $((seconds - lead)) && { job_processes; job_stacks; } >"$tmp/processes" ) \
    </dev/null >/dev/null 2>&1 &
  local watcher=$!
  out=$(timeout -k 5 "$seconds" "$@" 2>&1); rc=$?
  pkill -P "$watcher" 2>/dev/null; kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null
  if [ "$rc" -eq 124 ] && [ -s "$tmp/processes" ]; then
    out+=$'\n'"the processes $lead s before the time ran out:"$'\n'"$(cat "$tmp/processes")"
  fi
}
# Starts chapter 5 across the cable in the background with these flags (output in $log,
# the job's PID in $job) and returns once it has logged step 2: mid-run, for a fault.
# It waits as long as the job may run (its own timeout), not a guess at how fast a step
# is: on a machine busy with other tests the start of two ranks across the cable once
# took longer than the 60 s this used to allow. A job that ends before step 2 fails at
# once, with its output and status (that is a fault of the run, not of the wait).
start_until_step_2() {
  log="$tmp/run.log"
  timeout -k 5 170 "$script" run -- "$bin/05_ranks" $small "$@" >"$log" 2>&1 &
  job=$!
  local waited=0
  until grep -q ": step 2," "$log"; do
    if ! kill -0 "$job" 2>/dev/null; then
      wait "$job"; fail "the job ended (exit $?) before step 2: $(cat "$log")"
    fi
    [ "$waited" -lt 1500 ] || {
      local procs; procs=$(job_processes)
      kill "$job"; fail "no step 2 within 150 s, the job still running: $(cat "$log")
its processes then:
$procs"; }
    sleep 0.1; waited=$((waited + 1))
  done
}
# Waits for the job start_until_step_2 started: its exit status in rc, its output in out.
# With a start time (date +%s.%N), also the seconds since then in took.
wait_for_job() {
  wait "$job"; rc=$?
  [ $# -eq 0 ] || took=$(awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  out=$(cat "$log")
}
# After a fault at $1 (date +%s.%N), described as $2: the job must end with an error within
# 30 s (the keepalive's ~8 s and Open MPI's teardown), naming the second machine.
expect_ended_naming_host1() {
  wait_for_job "$1"
  [ "$rc" -ne 0 ] || fail "exit 0 after $2: $out"
  awk -v t="$took" 'BEGIN { exit !(t <= 30) }' || fail "the job took $took s after $2 (bound 30 s)"
  grep -q "$TWO_HOSTS_PREFIX-host1" <<<"$out" || fail "the lost node not named: $out"
  echo "$out" | tail -n 12
}
# Skips the case when there is no nft, which $1 (what the case runs) needs.
needs_nft() {
  command -v nft >/dev/null || skip "no nft (apt-get install nftables): $1 needs it"
}
# Segments TCP has sent again, on both machines: a retransmitted segment crosses the cable
# twice, and its counters count it twice (veth drops what a busy receiver's backlog has no
# room for).
tcp_retransmits() {
  local n total=0
  for n in 0 1; do
    total=$(( total + $(ip netns exec "$TWO_HOSTS_PREFIX-host$n" awk '/^Tcp:/ {
      if (!h) { for (i = 1; i <= NF; i++) if ($i == "RetransSegs") f = i; h = 1; next }
      print $f }' /proc/net/snmp) ))
  done
  echo "$total"
}
cable_bytes() {  # bytes host1's end of the cable has sent plus received
  local c=/sys/class/net/$TWO_HOSTS_PREFIX-v1/statistics
  echo $(( $(ip netns exec "$TWO_HOSTS_PREFIX-host1" cat "$c/tx_bytes") +
           $(ip netns exec "$TWO_HOSTS_PREFIX-host1" cat "$c/rx_bytes") ))
}

case $case_name in
bits)
  up=(--rate 1gbit)
  command -v nft >/dev/null && up+=(--loss 2) || echo "note: no nft, so no packet loss in this run"
  bounded 30 "$script" up "${up[@]}" || fail "up: $out"
  echo "$out"
  bounded 90 mpirun --allow-run-as-root --oversubscribe -n 2 "$bin/05_ranks" $small --steps 3 \
    --save-params "$tmp/one.ckpt"
  [ "$rc" -eq 0 ] || fail "one machine: exit $rc: $out"
  bounded 120 "$script" run -- "$bin/05_ranks" $small --steps 3 --save-params "$tmp/two.ckpt"
  [ "$rc" -eq 0 ] || fail "two machines: exit $rc: $out"
  grep -q "summary: .*ranks=2" <<<"$out" || fail "no summary with ranks=2: $out"
  cmp "$tmp/one.ckpt" "$tmp/two.ckpt" || fail "--save-params differ across the cable"
  echo "two machines (${up[*]}): --save-params equal the one-machine run's, $(stat -c %s "$tmp/one.ckpt") bytes"
  # Chapter 6 across the cable (buckets all-reduced during the backward pass) and chapter 6
  # in one process: the same bits as chapter 5 (two ranks: a + b == b + a).
  bounded 120 "$script" run -- "$bin/06_overlap_ranks" $small --steps 3 --bucket-mb 1 \
    --save-params "$tmp/six.ckpt"
  [ "$rc" -eq 0 ] || fail "chapter 6 on two machines: exit $rc: $out"
  bounded 90 "$bin/06_overlap" $small --steps 3 --devices 2 --save-params "$tmp/six-one.ckpt"
  [ "$rc" -eq 0 ] || fail "chapter 6 in one process: exit $rc: $out"
  cmp "$tmp/one.ckpt" "$tmp/six.ckpt" || fail "chapter 6 across the cable differs from chapter 5"
  cmp "$tmp/one.ckpt" "$tmp/six-one.ckpt" || fail "one-process chapter 6 differs from chapter 5"
  echo "chapter 6 across the cable and in one process: the same bytes"
  ;;
bytes)
  bounded 30 "$script" up || fail "up: $out"
  per_run=()
  for steps in 1 5; do
    before=$(cable_bytes)
    bounded 120 "$script" run -- "$bin/05_ranks" $small --steps $steps
    [ "$rc" -eq 0 ] || fail "$steps steps: exit $rc: $out"
    per_run+=($(( $(cable_bytes) - before )))
  done
  # Two directions, each carrying 2(N-1)/N x 4 x 1,068,298 bytes a step (N = 2).
  expected=$(( 2 * 4 * 1068298 ))
  per_step=$(( (per_run[1] - per_run[0]) / 4 ))
  overhead=$(awk -v m="$per_step" -v e="$expected" 'BEGIN { printf "%.2f", 100 * (m - e) / e }')
  echo "cable bytes: 1 step ${per_run[0]}, 5 steps ${per_run[1]}; per step $per_step," \
       "all-reduce payload $expected (both ways); overhead $overhead %"
  awk -v o="$overhead" 'BEGIN { exit !(o >= 0 && o <= 2) }' ||
    fail "per-step bytes are $overhead % off the all-reduce's payload (expected 0-2 % of headers)"
  ;;
kill)
  bounded 30 "$script" up || fail "up: $out"
  start=$(date +%s)
  bounded 60 "$script" run -- "$bin/05_ranks" $small --steps 50 --fail-rank 1 --fail-at-step 2 --fail-how kill
  took=$(( $(date +%s) - start ))
  # mpirun passes on the killed rank's status (137 = 128 + SIGKILL), so the time tells a
  # timeout (60 s) from an error.
  [ "$rc" -ne 0 ] && [ "$took" -lt 50 ] || fail "exit $rc after $took s (bound 50 s): $out"
  grep -q "rank 1 fails (kill) at step 2" <<<"$out" || fail "the fault did not happen: $out"
  grep -q "process rank 1 .*on node $TWO_HOSTS_PREFIX-host1" <<<"$out" || fail "rank 1's node not named: $out"
  grep -q "signal 9" <<<"$out" || fail "the signal not named: $out"
  echo "$out" | tail -n 12
  echo "killed rank on the second machine: job ended in $took s with exit $rc"
  ;;
cut)
  needs_nft "scripts/two-hosts cut"
  bounded 30 "$script" up || fail "up: $out"
  start_until_step_2 --steps 100000 --collective-timeout 60
  "$script" cut || fail "cut failed"
  expect_ended_naming_host1 "$(date +%s.%N)" "the cut"
  grep -q "lost communication with a remote daemon" <<<"$out" || fail "no lost-daemon error: $out"
  grep -q "on node $TWO_HOSTS_PREFIX-host1" <<<"$out" || fail "the lost node not named: $out"
  echo "cable cut for good: job ended $took s after the cut, exit $rc"
  ;;
outage)
  needs_nft "scripts/two-hosts cut"
  bounded 30 "$script" up || fail "up: $out"
  steps=30   # ~7 s: the outage after step 2 falls well inside the run
  bounded 120 "$script" run -- "$bin/05_ranks" $small --steps $steps --save-params "$tmp/calm.ckpt"
  [ "$rc" -eq 0 ] || fail "the run without an outage: exit $rc: $out"
  start_until_step_2 --steps $steps --save-params "$tmp/outage.ckpt"
  "$script" cut || fail "cut failed"
  sleep 2   # only 6 probes a second apart, all unanswered, end the job: 5 s at least
  "$script" mend || fail "mend failed"
  kill -0 "$job" 2>/dev/null || fail "the job had ended before the cable was mended: nothing tested"
  wait_for_job
  [ "$rc" -eq 0 ] || fail "a 2 s outage ended the job (exit $rc): $out"
  grep -q "summary: .*steps=$steps" <<<"$out" || fail "no summary of $steps steps: $out"
  cmp "$tmp/calm.ckpt" "$tmp/outage.ckpt" || fail "--save-params after the outage differ"
  echo "a 2 s outage after step 2: the job went on, and its parameters equal the calm run's"
  ;;
daemon)
  bounded 30 "$script" up || fail "up: $out"
  start_until_step_2 --steps 100000 --collective-timeout 60
  # The daemon Open MPI started on the second machine (prted in Open MPI 5, orted before):
  # the process of that name whose network namespace is host1's.
  daemon=""
  for pid in $(ip netns pids "$TWO_HOSTS_PREFIX-host1"); do
    name=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
    [[ $name == prted || $name == orted ]] && daemon=$pid && break
  done
  [ -n "$daemon" ] || { kill "$job"; fail "no orted/prted in $TWO_HOSTS_PREFIX-host1"; }
  kill -9 "$daemon"
  expect_ended_naming_host1 "$(date +%s.%N)" "the daemon was killed"
  echo "the second machine's daemon killed: job ended $took s later, exit $rc"
  ;;
refuse)
  # The rate and loss one end of the cable has now (tc's rate, nft's percentage or none).
  end_rate() { ip netns exec "$TWO_HOSTS_PREFIX-host$1" tc qdisc show dev "$TWO_HOSTS_PREFIX-v$1" |
               sed -nE 's/.*tbf .* rate ([^ ]+) .*/\1/p'; }
  end_loss() { ip netns exec "$TWO_HOSTS_PREFIX-host$1" nft list ruleset 2>/dev/null |
               sed -nE 's/.*mod 100 < ([0-9]+) drop.*/\1/p'; }
  # expect_ends RATE LOSS WHEN: both ends and `status` show RATE (tc's words) and LOSS.
  expect_ends() {
    for end in 0 1; do
      [ "$(end_rate $end)" = "$1" ] || fail "$3: end $end shapes to '$(end_rate $end)', not $1"
      [ "$(end_loss $end)" = "$2" ] || fail "$3: end $end drops '$(end_loss $end)' %, not $2"
    done
    local said; said=$("$script" status)
    grep -qi "rate: $1 *loss: $2 %" <<<"$said" || fail "$3: status says $said"
  }
  needs_nft "--loss"
  bounded 30 "$script" up --rate 1gbit --loss 2 || fail "up: $out"
  expect_ends 1Gbit 2 "after up"
  bounded 30 "$script" up --rate 100000gbit
  [ "$rc" -ne 0 ] && grep -q -- "--rate 100000gbit: at most 100gbit" <<<"$out" ||
    fail "100000gbit: exit $rc: $out"
  expect_ends 1Gbit 2 "after a rate tc cannot take"
  # tc and nft that refuse on the second machine's end only: the first end, changed
  # already, must go back.
  mkdir -p "$tmp/stand-ins"
  cat >"$tmp/stand-ins/tc" <<EOF
#!/bin/sh
case "\$*" in *replace*$TWO_HOSTS_PREFIX-v1*500mbit*) echo "stand-in tc: refused" >&2; exit 2 ;; esac
exec $(command -v tc) "\$@"
EOF
  cat >"$tmp/stand-ins/nft" <<EOF
#!/bin/sh
[ "\$1" = -f ] || exec $(command -v nft) "\$@"
rules=\$(cat)
case "\$rules" in *$TWO_HOSTS_PREFIX-v1*"< 5 "*) echo "stand-in nft: refused" >&2; exit 1 ;; esac
printf '%s\n' "\$rules" | exec $(command -v nft) "\$@"
EOF
  chmod +x "$tmp/stand-ins/tc" "$tmp/stand-ins/nft"
  bounded 30 env PATH="$tmp/stand-ins:$PATH" "$script" up --rate 500mbit --loss 2
  [ "$rc" -ne 0 ] && grep -q "both ends keep rate 1gbit, loss 2 %" <<<"$out" || fail "500mbit refused: exit $rc: $out"
  expect_ends 1Gbit 2 "after tc refused one end"
  bounded 30 env PATH="$tmp/stand-ins:$PATH" "$script" up --rate 250mbit --loss 5
  [ "$rc" -ne 0 ] && grep -q "both ends keep rate 1gbit, loss 2 %" <<<"$out" || fail "loss 5 refused: exit $rc: $out"
  expect_ends 1Gbit 2 "after nft refused one end"
  bounded 30 "$script" up --rate 1gbit --loss 08 || fail "--loss 08: $out"
  expect_ends 1Gbit 8 "after --loss 08"
  for program in no-such-program "$tmp"; do
    bounded 30 "$script" run -- "$program" --steps 1
    [ "$rc" -ne 0 ] && grep -qE "run: (no program 'no-such-program'|'$tmp' is not an executable file)" <<<"$out" ||
      fail "run -- $program: exit $rc: $out"
    grep -q "unbound variable" <<<"$out" && fail "run -- $program: $out"
  done
  echo "refused before changing anything; both ends and status kept 1gbit and 2 %; --loss 08 is 8"
  ;;
loss)
  needs_nft "--loss"
  bounded 30 "$script" up --loss 30 || fail "up: $out"
  grep -q "note: at 30 % loss" <<<"$out" || fail "up --loss 30 did not warn: $out"
  bounded 180 "$script" run -- "$bin/05_ranks" $small --steps 100000 --collective-timeout 10
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "exit $rc (124: not ended within 180 s): $out"
  grep -q "two-hosts: the job ended (exit $rc) while the link dropped 30 % of the packets" <<<"$out" ||
    fail "not told it was the packet loss: $out"
  grep -q "the cable was never cut" <<<"$out" && grep -q -- "--loss 10 or less" <<<"$out" ||
    fail "not told what to do: $out"
  echo "$out" | tail -n 3
  ;;
link)
  link_bench="$root/bench/two-hosts-link"
  for bad in 100000gbit fast; do
    bounded 10 "$link_bench" --rates "$bad" --bin "$bin"
    [ "$rc" -eq 2 ] && grep -q -- "--rates: '$bad' is not a rate from 8kbit to 100gbit" <<<"$out" ||
      fail "--rates $bad: exit $rc: $out"
  done
  stand_ins="$tmp/bin"
  mkdir -p "$stand_ins"
  ln -s "$bin/06_overlap" "$stand_ins/06_overlap"
  # bench_allreduce_mpi's table on rank 0: size, then time (us) algbw busbw #wrong for
  # MPI_Allreduce, the ring and chapter 4's ring; the ring's time 200 us + the bytes at 90 %
  # of the rate `up` shaped the cable to (scripts/two-hosts keeps it in /run).
  cat >"$stand_ins/bench_allreduce_mpi" <<'EOF'
#!/bin/sh
[ "${OMPI_COMM_WORLD_RANK:-0}" = 0 ] || exit 0
bits=$(awk '{ n = $0 + 0; u = substr($0, length(n "") + 1);
              print n * (u == "gbit" ? 1e9 : u == "mbit" ? 1e6 : 1e3) }' "/run/$TWO_HOSTS_PREFIX-two-hosts/rate")
size=4096
while [ $size -le 67108864 ]; do
  t=$(awk -v b=$size -v r="$bits" 'BEGIN { printf "%.1f", 200 + 8 * b / (0.9 * r) * 1e6 }')
  echo "  $size $t 1 1 0 $t 1 1 0 $t 1 1 0"
  size=$((size * 4))
done
echo "summary: ranks=2 sizes=12 wrong=0"
EOF
  cat >"$stand_ins/06_overlap_ranks" <<'EOF'
#!/bin/sh
[ "${OMPI_COMM_WORLD_RANK:-0}" = 0 ] || exit 0
echo "summary: backend=host steps=2 step_ms=500.0"
EOF
  chmod +x "$stand_ins/bench_allreduce_mpi" "$stand_ins/06_overlap_ranks"
  bounded 200 "$link_bench" --rates "100mbit 1gbit" --repeats 1 --steps 2 --batch-size 2 --bin "$stand_ins"
  [ "$rc" -eq 0 ] || fail "exit $rc: $out"
  grep -qE '^\| 100mbit \|.*\| n/a \(outside the model\) \| n/a \| n/a \|$' <<<"$out" ||
    fail "no 100mbit row with n/a simulated columns: $out"
  grep -q "Note: 100mbit: the fit gives --link-gbps 0.09.*outside the link model's range" <<<"$out" ||
    fail "no note on 100mbit: $out"
  grep -qE '^\| 1gbit \|.*\| --link-gbps [0-9.]+ --link-latency-us [0-9]+ \| [0-9.]+ \| [0-9.]+ \|$' <<<"$out" ||
    fail "no simulated 1gbit row: $out"
  grep "^|" <<<"$out" | tail -n 2
  ;;
mesh)
  # Chapter 11's mesh across the cable: which dimension's bytes cross it is decided by where
  # the ranks sit. Ranks 0..K-1 are on the first machine and rank = (d*pp + p)*tp + t, so
  # with two ranks a machine a 2x2x1 or 2x1x2 mesh keeps its tensor or pipeline pair on one
  # machine and sends only the data dimension across; with one rank a machine, the one
  # dimension of a 1-D mesh crosses. The cable must carry, per step, the bytes the run
  # counts for that dimension (its summary), plus headers, within -1 to 5 % (measured -0.4 to
  # 2 %: more with two flows on the cable at once, less when the runs' wire-ups differ), and no other dimension's: at batch 32 the
  # smallest one kept on a machine, 2x2x1's tensor pair, would add 13.6 %.
  bounded 30 "$script" up || fail "up: $out"
  # A collective timeout past the bound: a rank that hangs is then still there when
  # bounded looks (its stacks and sockets in the failure), not ended by a watchdog first
  # (a watchdog once named rank 0 in the last barrier, and nothing said why).
  mesh_flags="--batch-size 32 --log-every 1 --collective-timeout 150"
  # cable_per_step PER_HOST FLAGS...: the cable's bytes per step (9 steps minus 1, /8: Open
  # MPI's wire-up at the start of each run differs by up to ~100 KB, so many steps apart)
  # in $per_step, the 9-step run's summary in $summary, the segments TCP sent again
  # during both runs in $resent.
  cable_per_step() {
    local per_host=$1; shift
    local runs=()
    local resent_before; resent_before=$(tcp_retransmits)
    for steps in 1 9; do
      local before; before=$(cable_bytes)
      bounded 120 "$script" run --per-host "$per_host" -- "$bin/11_mesh" $mesh_flags "$@" --steps $steps
      [ "$rc" -eq 0 ] || fail "11_mesh $* ($steps steps, $per_host a machine): exit $rc: $out"
      runs+=($(( $(cable_bytes) - before )))
    done
    per_step=$(( (runs[1] - runs[0]) / 8 ))
    summary=$(grep "^summary: " <<<"$out")
    resent=$(( $(tcp_retransmits) - resent_before ))
  }
  key() { sed -nE "s/.* $1=([^ ]+).*/\1/p" <<<"$summary"; }
  # expect_crossing DIMENSION PER_HOST FLAGS...
  # A measurement during which TCP resent segments counts them twice: it is taken once
  # more, and only a clean one, or a second out of range, decides (one CI run measured
  # 2x1x2 at +6.17 %, where 40 runs here measured 0.2 to 0.5 %).
  expect_crossing() {
    local dimension=$1; shift
    local overhead counted attempt
    for attempt in 1 2; do
      cable_per_step "$@"
      counted=$(key "wire_${dimension}_bytes_per_step")
      [ -n "$counted" ] && [ "$counted" -gt 0 ] || fail "11_mesh ${*:2}: no $dimension bytes counted: $summary"
      overhead=$(awk -v m="$per_step" -v e="$counted" 'BEGIN { printf "%.2f", 100 * (m - e) / e }')
      echo "mesh $(key mesh), $1 rank(s) a machine: the cable carried $per_step bytes a step;" \
           "the $dimension dimension counted $counted (+$overhead %); TCP resent $resent segment(s)"
      awk -v o="$overhead" 'BEGIN { exit !(o >= -1 && o <= 5) }' && return
      [ "$resent" -gt 0 ] || break
      echo "  (TCP resent segments during that measurement: measuring once more)"
    done
    fail "mesh $(key mesh): the cable's bytes are $overhead % off the $dimension dimension's (-1 to 5 % expected: headers, less the wire-ups' difference; TCP resent $resent segment(s) meanwhile): $summary"
  }
  expect_crossing tensor 1 --tp 2
  expect_crossing pipeline 1 --pp 2 --micro-batches 4
  expect_crossing data 2 --dp 2 --tp 2
  expect_crossing data 2 --dp 2 --pp 2 --micro-batches 4
  # The same bits as on one machine: the cable changes where bytes go, not the sums.
  for mesh in "--dp 2 --tp 2" "--dp 2 --pp 2 --micro-batches 4"; do
    bounded 120 mpirun --allow-run-as-root --oversubscribe -n 4 "$bin/11_mesh" $mesh_flags $mesh \
      --steps 3 --save-params "$tmp/one.ckpt"
    [ "$rc" -eq 0 ] || fail "11_mesh $mesh on one machine: exit $rc: $out"
    bounded 120 "$script" run --per-host 2 -- "$bin/11_mesh" $mesh_flags $mesh --steps 3 \
      --save-params "$tmp/two.ckpt"
    [ "$rc" -eq 0 ] || fail "11_mesh $mesh on two machines: exit $rc: $out"
    cmp "$tmp/one.ckpt" "$tmp/two.ckpt" || fail "11_mesh $mesh: --save-params differ across the cable"
    echo "11_mesh $mesh across the cable: --save-params equal the one-machine run's"
  done
  ;;
*) fail "unknown case '$case_name'" ;;
esac
exit 0

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/gpu-check --dry-run (issue 37): the GPU lease's two device calls, call 1 within
# 300 s and call 2 within 240 s. The dry run runs nothing and writes nothing; it lists each
# call's steps with their budgets, in the issue's order, and each call's total is the sum
# of its steps' and within its limit. Between them every chapter folder's program runs on
# cuda (chapter 5 under mpiexec with NCCL), chapter 8 at each ZeRO stage, chapter 9 with
# --model cifar, with the bit comparisons the pages promise; the build is two timed steps;
# the CUDA test selection holds every cuda test of this build and no host-backend or
# mpiexec test, the timing and ledger tests serially; no EAGER module loading; the PyTorch
# twin in eager mode only. Copies of the scripts with a step over budget, or with a new
# chapter folder, show that the checks can fail and that detection works.
# No pipefail: `echo "$out" | grep -q` would fail whenever grep -q leaves at the first
# match while echo still writes (SIGPIPE), and the tests check grep's answer only.
set -u
root=${1:?usage: gpu_check_plan_test.sh <source dir> [<build dir>]}
build=${2:-}
cd "$root"
fail() { echo "FAIL: $*"; echo "--- output:"; echo "${out:-}"; exit 1; }

results_before=$(ls bench/results 2>/dev/null | sort)
had_build_gpu=$([ -d build-gpu ] && echo yes || echo no)
out=$(PATH="/usr/bin:/bin" OUT= scripts/gpu-check --dry-run 2>&1) || fail "exit status $?"
[ "$(ls bench/results 2>/dev/null | sort)" = "$results_before" ] || fail "a dry run wrote bench/results"
[ "$had_build_gpu" = yes ] || [ ! -d build-gpu ] || fail "a dry run made build-gpu"
all=$out

# The plan of call N, from its header to its total.
plan() { echo "$all" | sed -n "/^call $1 of 2:/,/^call $1: total budget/p"; }
for call in 1 2; do
  out=$(plan "$call")
  limit=$([ "$call" = 1 ] && echo 300 || echo 240)
  [ -n "$out" ] || { out=$all; fail "no plan for call $call"; }
  echo "$out" | head -n1 | grep -q "at most $limit s (scripts/gpu-check --call $call)" || fail "call $call: not $limit s"
  total=$(echo "$out" | sed -nE "s/^call $call: total budget ([0-9]+) s of $limit s$/\1/p")
  [ -n "$total" ] || fail "call $call: no 'total budget: N s of $limit s' line"
  sum=$(echo "$out" | sed -nE 's/^step +[0-9]+: .* budget +([0-9]+) s .*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
  [ "$sum" = "$total" ] || fail "call $call: the steps' budgets add up to $sum, the total says $total"
  [ "$total" -le "$limit" ] || fail "call $call: total budget $total s is over $limit s"
done

# The steps, in order (extended regexes on the step lines).
in_order() {
  local call=$1; shift
  local line=0 pattern found
  out=$(plan "$call")
  for pattern in "$@"; do
    found=$(echo "$out" | tail -n +"$((line + 1))" | grep -nE -m1 -- "$pattern" | cut -d: -f1)
    [ -n "$found" ] || fail "call $call: step missing, or out of order: $pattern"
    line=$((line + found))
  done
}
in_order 1 "^step +1: env" "^step .*build 1/2: .*programs" "^step .*build 2/2: .*test programs" \
  "^step .*chapters 0-3" "^step .*chapters 4, 6, 7" "^step .*chapter 8 .*ZeRO 0-3" \
  "^step .*chapter 9 .*cifar" "^step .*CUDA tests .*serially" "^step .*summary"
in_order 2 "^step +1: env" "^step .*build 1/2: .*programs" "^step .*build 2/2: .*test programs" \
  "^step .*ledger.*cudaMemGetInfo" "^step .*sanitizer: memcheck" "^step .*chapter 5 under mpiexec" \
  "^step .*tick" "^step .*PyTorch eager twin" "^step .*towers" "^step .*all-reduce" "^step .*input" \
  "^step .*graph" "^step .*summary"

out=$all
# Every chapter folder's program runs on cuda, in one call or the other, and is built there;
# but a chapter with no CUDA path (gpu-check's host_only list) has no device work to run:
# it must make its runtime on the host backend itself and take no flag that chooses one (a
# chapter with --backend, from the shared runtime, tower or rank flags, can run on cuda,
# and must).
host_only=$(sed -n 's/^host_only=(\(.*\))$/\1/p' scripts/gpu-bench.d/1-40-new-chapters.sh)
for dir in chapters/[0-9][0-9]_*/; do
  name=$(basename "$dir")
  if [[ " $host_only " == *" $name "* ]]; then
    grep -rqE 'Runtime::create\(\{\.backend = BackendChoice::kHost' "$dir" ||
      fail "chapter $name is listed as host only in gpu-check but makes no host runtime of its own"
    ! grep -rqE -- 'add_runtime_flags|TowerFlags|RankFlags|"--backend"|BackendChoice::k(Cuda|Auto)' "$dir" ||
      fail "chapter $name is listed as host only in gpu-check but can choose a backend: give it a step"
    continue
  fi
  echo "$out" | grep -qE -- "would run: .*build-gpu/bin/$name --backend cuda" ||
    fail "chapter $name does not run on cuda"
  for call in 1 2; do
    plan "$call" | grep -qE -- "would run: .*build-gpu/bin/$name --backend cuda" || continue
    plan "$call" | grep "would run: cmake --build --preset gpu --target" | grep -qw -- "$name" ||
      fail "chapter $name runs in call $call but is not built there"
  done
done
plan 2 | grep -qE "would run: .*mpiexec .*-n 1 .*05_ranks --backend cuda --allreduce nccl" ||
  fail "chapter 5 under mpiexec -n 1 with NCCL is missing from call 2"
for chapter in 02_serial_towers 03_stream_towers 04_nccl_iterator 06_overlap 07_graph 08_sharded; do
  plan 1 | grep -qE "would run: .*$chapter .*--probe .*--save-params" || fail "$chapter: no run with --probe and --save-params"
done
for stage in 0 1 2 3; do
  plan 1 | grep -qE "would run: .*08_sharded .*--zero $stage .*--save-params" || fail "chapter 8 does not run --zero $stage"
  plan 1 | grep -q "would check: ZeRO-$stage = chapter 4" || fail "ZeRO-$stage is not compared with chapter 4"
done
plan 1 | grep -qE "would run: .*08_sharded .*--zero 3 --gather-prefetch off" || fail "no --gather-prefetch off run"
plan 1 | grep -qE "would run: .*08_sharded .*--zero 0 --optimizer adam" || fail "no unsharded Adam run"
plan 1 | grep -qE "would run: .*08_sharded .*--zero [123] --optimizer adam" || fail "no sharded Adam run"
plan 1 | grep -qE "would run: .*09_pipeline --backend cuda .*--model cifar .*--save-params" || fail "no chapter 9 --model cifar"
plan 1 | grep -qE "would run: .*01_single_gpu --backend cuda --accumulate" || fail "no chapter 1 --accumulate"
for schedule in 1f1b gpipe; do
  plan 1 | grep -qE "would run: .*09_pipeline .*--schedule $schedule .*--probe" || fail "no chapter 9 $schedule probe"
done
for bits in "chapter 2 = chapter 3" "graph replay = eager" "overlap on = off" "chapter 6 = chapter 4" \
            "gather-prefetch off = chapter 4" "Adam sharded .* = Adam unsharded" \
            "chapter 9 --model cifar = chapter 1 --accumulate"; do
  plan 1 | grep -qE "would check: .*$bits" || fail "no comparison: $bits"
done
plan 1 | grep -q "would check: peak_workspace_bytes>=1" || fail "the ledger's workspace line is not checked on cuda"
# The build: two steps, programs then tests, each timed.
for call in 1 2; do
  plan "$call" | grep -q "would run: cmake --build --preset gpu --target .*(the targets this build has; timed)" ||
    fail "call $call: the programs' build is not timed"
  plan "$call" | grep -q "would run: cmake --build --preset gpu --target test_.*(timed)" ||
    fail "call $call: the tests' build is not timed"
done
for bench in bench_train bench_towers bench_allreduce bench_input bench_graph bench_globaltimer_tick; do
  plan 2 | grep -qE "would run: .*$bench( --backend cuda|[ ]|$)" || fail "$bench is not run in call 2"
done
plan 2 | grep -qE "would run: compute-sanitizer --tool memcheck .*07_graph" || fail "no memcheck of a captured step"
plan 2 | grep -qE "would run: ctest --preset gpu -R '\^CudaLedger" || fail "no ledger against cudaMemGetInfo"
# The PyTorch twin in eager mode only (torch.compile takes minutes and is not compared).
plan 2 | grep -qE "would run: python3 bench/torch_cifar10_gpu.py --modes eager " || fail "the PyTorch twin is not eager-only"
# Lazy module loading: nothing forces EAGER.
! grep -nE "CUDA_MODULE_LOADING=EAGER|export CUDA_MODULE_LOADING" scripts/gpu-check scripts/gpu-bench.d/*.sh ||
  fail "gpu-check forces a module loading mode"

# The CUDA test selection, against this build's tests when it lists them.
out=$(plan 1)
select=$(echo "$out" | sed -nE "s/.*would run: ctest --preset gpu -R '([^']+)' -E '([^']+)' -LE '([^']+)'.* -j 4.*/\1/p")
serial=$(echo "$out" | sed -nE "s/.*would run: ctest --preset gpu -R '([^']+)' -E '([^']+)' -LE '([^']+)'.* -j 4.*/\2/p")
labels=$(echo "$out" | sed -nE "s/.*would run: ctest --preset gpu -R '([^']+)' -E '([^']+)' -LE '([^']+)'.* -j 4.*/\3/p")
[ -n "$select" ] && [ -n "$serial" ] || fail "no 'ctest -R ... -E ... -LE ... -j 4' line"
echo "$labels" | grep -q "chapter-5" && echo "$labels" | grep -q "two-hosts" || fail "mpiexec labels not excluded: $labels"
echo "$out" | grep -qE "would run: ctest .*-j 1" || fail "the timing and ledger tests do not run serially"
if [ -n "$build" ] && all_tests=$(ctest --test-dir "$build" -N 2>/dev/null | sed -nE 's/^ *Test +#[0-9]+: (.*)$/\1/p') &&
   echo "$all_tests" | grep -qE '/cuda( |$)'; then
  mpi=$(ctest --test-dir "$build" -N -L "$labels" 2>/dev/null | sed -nE 's/^ *Test +#[0-9]+: (.*)$/\1/p')
  chosen=$(echo "$all_tests" | grep -E -- "$select" | grep -vxF -f <(echo "$mpi"))
  missing=$(echo "$all_tests" | grep -E '/cuda( |$)' | grep -vxF -f <(echo "$chosen"))
  [ -z "$missing" ] || fail "cuda tests left out of the selection: $missing"
  wrong=$(echo "$chosen" | grep -E '/host( |$)|^(SingleGpu|Towers|Ranks|Overlap|Graph|IteratorTowers|Experiment|NothingLost|ExactResume)\.|HostBackend|^Host')
  [ -z "$wrong" ] || fail "host-backend tests in the CUDA selection: $wrong"
  for name in RendezvousProbe KernelStampsBoth Events.ElapsedTime MemoryLedgerOf CudaLedger; do
    # A build without CUDA compiled (the asan preset) has the /cuda cases but not every
    # CUDA-only test program: ask only for the tests this build has.
    echo "$all_tests" | grep -q "$name" || continue
    echo "$chosen" | grep -q "$name" || fail "no $name test selected"
    echo "$chosen" | grep "$name" | grep -qvE -- "$serial" && fail "$name runs beside other tests (not in '$serial')"
  done
  # gpu-check builds only some targets: every selected test's program must be one of them.
  build_line=$(echo "$out" | grep "would run: cmake --build --preset gpu --target test_")
  programs=$(ctest --test-dir "$build" --show-only=json-v1 -R "$select" -LE "$labels" |
             python3 -c 'import json, os, sys
print("\n".join(sorted({os.path.basename(t["command"][0]) for t in json.load(sys.stdin)["tests"]})))')
  [ -n "$programs" ] || fail "no program holds the selected tests"
  for program in $programs; do
    echo "$build_line" | grep -qw -- "$program" || fail "the CUDA tests of $program are selected, but call 1 does not build it"
  done
  echo "CUDA selection: $(echo "$chosen" | grep -c .) of $(echo "$all_tests" | grep -c .) tests, in $(echo $programs)"
else
  echo "note: no discovered tests in '${build:-no build dir}': selection checked by its text only"
fi

# The checks can fail: a copy with a step over budget is refused, naming the call; a new
# chapter folder is detected and run, and call 1 must then make room for it.
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -r scripts "$copy/"
mkdir -p "$copy/chapters" "$copy/bench"
for dir in chapters/[0-9][0-9]_*/; do mkdir -p "$copy/$dir"; done
cp bench/torch_cifar10_gpu.py "$copy/bench/"
printf 'step "too long" 100 && { run_bench "sleep" 100 sleep 100; }\n' > "$copy/scripts/gpu-bench.d/2-75-too-long.sh"
over=$(cd "$copy" && PATH="/usr/bin:/bin" OUT= scripts/gpu-check --dry-run 2>&1) && { out=$over; fail "a plan over 240 s was accepted"; }
echo "$over" | grep -q "call 2's steps' budgets add up to .* over the 240 s" || { out=$over; fail "no reason given for a plan over 240 s"; }
rm "$copy/scripts/gpu-bench.d/2-75-too-long.sh"
mkdir -p "$copy/chapters/10_next"
more=$(cd "$copy" && PATH="/usr/bin:/bin" OUT= scripts/gpu-check --dry-run --call 1 2>&1)
echo "$more" | grep -qE "^step .*chapters no step names: 10_next" || { out=$more; fail "chapter 10_next not detected"; }
echo "$more" | grep -qE "would run: build-gpu/bin/10_next --backend cuda" || { out=$more; fail "chapter 10_next is not run"; }
echo "$more" | grep "would run: cmake --build --preset gpu --target" | grep -qw 10_next || { out=$more; fail "chapter 10_next is not built"; }

# The PyTorch script at least parses (torch itself is not needed for that).
python3 -m py_compile bench/torch_cifar10_gpu.py 2>&1 || fail "bench/torch_cifar10_gpu.py does not compile"
python3 bench/torch_cifar10_gpu.py --help >/dev/null || fail "torch_cifar10_gpu.py --help needs torch"
# Wrong arguments are refused with a hint, before anything runs.
bad=$(scripts/gpu-check --dyr-run 2>&1) && fail "an unknown argument was accepted"
echo "$bad" | grep -q -- "--dry-run" || fail "no hint for an unknown argument: $bad"
bad=$(scripts/gpu-check --call 3 2>&1); [ $? -eq 2 ] || fail "--call 3 was accepted"
bad=$(OUT= scripts/gpu-check 2>&1); [ $? -eq 2 ] || fail "a run that names no call was accepted"
echo "$bad" | grep -q -- "--call 1" || fail "no hint when no call is named: $bad"
echo "PASS: call 1 $(plan 1 | grep -c '^step') steps, call 2 $(plan 2 | grep -c '^step') steps," \
     "$(echo "$all" | grep -c 'would run') commands"

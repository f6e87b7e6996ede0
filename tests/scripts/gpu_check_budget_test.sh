#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/gpu-check --dry-run (issue 26): one device call of at most 540 s. The dry run runs
# nothing and writes nothing; it lists every step with its budget, in the issue's order,
# and the budgets add up to at most 540 s; every chapter folder's program runs on cuda
# (chapters past 7 detected); the CUDA test selection holds every cuda test of this build
# and no host-backend or mpiexec test; no EAGER module loading; the PyTorch twin in eager
# mode only. A copy of the scripts with a step over budget, or with a new chapter folder,
# shows that the checks can fail and that detection works.
# No pipefail: `echo "$out" | grep -q` would fail whenever grep -q leaves at the first
# match while echo still writes (SIGPIPE), and the tests check grep's answer only.
set -u
root=${1:?usage: gpu_check_budget_test.sh <source dir> [<build dir>]}
build=${2:-}
cd "$root"
fail() { echo "FAIL: $*"; echo "--- output:"; echo "${out:-}"; exit 1; }

results_before=$(ls bench/results 2>/dev/null | sort)
had_build_gpu=$([ -d build-gpu ] && echo yes || echo no)
out=$(PATH="/usr/bin:/bin" OUT= scripts/gpu-check --dry-run 2>&1) || fail "exit status $?"
[ "$(ls bench/results 2>/dev/null | sort)" = "$results_before" ] || fail "a dry run wrote bench/results"
[ "$had_build_gpu" = yes ] || [ ! -d build-gpu ] || fail "a dry run made build-gpu"

# The budget: each step's, their sum, at most 540 s.
total=$(echo "$out" | sed -nE 's/^total budget: ([0-9]+) s of 540 s$/\1/p')
[ -n "$total" ] || fail "no 'total budget: N s of 540 s' line"
sum=$(echo "$out" | sed -nE 's/^step +[0-9]+: .* budget +([0-9]+) s .*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
[ "$sum" = "$total" ] || fail "the steps' budgets add up to $sum, the total says $total"
[ "$total" -le 540 ] || fail "total budget $total s is over 540 s"

# The steps, in the issue's order (extended regexes on the step lines).
expected=(
  "^step +1: env: .*globaltimer tick"
  "^step .*build"
  "^step .*CUDA tests"
  "^step .*chapters 0-3"
  "^step .*chapters 4, 6, 7"
  "^step .*chapter 5 under mpiexec -n 1"
  "^step .*PyTorch eager twin"
  "^step .*towers"
  "^step .*all-reduce"
  "^step .*input"
  "^step .*graph"
  "^step .*sanitizer"
  "^step .*summary"
)
line=0
for pattern in "${expected[@]}"; do
  found=$(echo "$out" | tail -n +"$((line + 1))" | grep -nE -m1 -- "$pattern" | cut -d: -f1)
  [ -n "$found" ] || fail "step missing, or out of order: $pattern"
  line=$((line + found))
done

# Every chapter folder's program runs on cuda; 05 under mpiexec with NCCL.
for dir in chapters/[0-9][0-9]_*/; do
  name=$(basename "$dir")
  echo "$out" | grep -qE -- "would run: .*build-gpu/bin/$name --backend cuda" ||
    fail "chapter $name does not run on cuda"
done
build_line=$(echo "$out" | grep "would run: cmake --build --preset gpu --target")
for dir in chapters/[0-9][0-9]_*/; do
  echo "$build_line" | grep -qw -- "$(basename "$dir")" || fail "chapter $(basename "$dir") is not built"
done
echo "$out" | grep -qE "would run: .*mpiexec .*-n 1 .*05_ranks --backend cuda --allreduce nccl" ||
  fail "chapter 5 under mpiexec -n 1 with NCCL is missing"
for chapter in 02_serial_towers 03_stream_towers 04_nccl_iterator 06_overlap 07_graph; do
  echo "$out" | grep -qE "would run: .*$chapter .*--probe .*--save-params" || fail "$chapter: no run with --probe and --save-params"
done
for bits in "chapter 2 = chapter 3" "graph replay = eager" "overlap on = off" "chapter 6 = chapter 4"; do
  echo "$out" | grep -q "would check: .*$bits" || fail "no comparison: $bits"
done
for bench in bench_train bench_towers bench_allreduce bench_input bench_graph; do
  echo "$out" | grep -qE "would run: .*$bench --backend cuda" || fail "$bench is not run"
done
echo "$out" | grep -qE "would run: nvcc .*bench/globaltimer_tick.cu" || fail "the %globaltimer tick is not measured"
[ -f bench/globaltimer_tick.cu ] || fail "bench/globaltimer_tick.cu is missing"
echo "$out" | grep -qE "would run: compute-sanitizer --tool memcheck .*07_graph" || fail "no memcheck of a captured step"
# The PyTorch twin in eager mode only (torch.compile takes minutes and is not compared).
echo "$out" | grep -qE "would run: python3 bench/torch_cifar10_gpu.py --modes eager " || fail "the PyTorch twin is not eager-only"
# Lazy module loading: nothing forces EAGER.
! grep -nE "CUDA_MODULE_LOADING=EAGER|export CUDA_MODULE_LOADING" scripts/gpu-check scripts/gpu-bench.d/*.sh ||
  fail "gpu-check forces a module loading mode"

# The CUDA test selection, against this build's tests when it lists them.
select=$(echo "$out" | sed -nE "s/.*would run: ctest --preset gpu -R '([^']+)' -E '([^']+)' -LE '([^']+)'.* -j 4.*/\1/p")
timing=$(echo "$out" | sed -nE "s/.*would run: ctest --preset gpu -R '([^']+)' -E '([^']+)' -LE '([^']+)'.* -j 4.*/\2/p")
labels=$(echo "$out" | sed -nE "s/.*would run: ctest --preset gpu -R '([^']+)' -E '([^']+)' -LE '([^']+)'.* -j 4.*/\3/p")
[ -n "$select" ] && [ -n "$timing" ] || fail "no 'ctest -R ... -E ... -LE ... -j 4' line"
echo "$labels" | grep -q "chapter-5" && echo "$labels" | grep -q "two-hosts" || fail "mpiexec labels not excluded: $labels"
echo "$out" | grep -qE "would run: ctest .*-j 1" || fail "the timing tests do not run serially"
if [ -n "$build" ] && all=$(ctest --test-dir "$build" -N 2>/dev/null | sed -nE 's/^ *Test +#[0-9]+: (.*)$/\1/p') &&
   echo "$all" | grep -qE '/cuda( |$)'; then
  mpi=$(ctest --test-dir "$build" -N -L "$labels" 2>/dev/null | sed -nE 's/^ *Test +#[0-9]+: (.*)$/\1/p')
  chosen=$(echo "$all" | grep -E -- "$select" | grep -vxF -f <(echo "$mpi"))
  missing=$(echo "$all" | grep -E '/cuda( |$)' | grep -vxF -f <(echo "$chosen"))
  [ -z "$missing" ] || fail "cuda tests left out of the selection: $missing"
  wrong=$(echo "$chosen" | grep -E '/host( |$)|^(SingleGpu|Towers|Ranks|Overlap|Graph|IteratorTowers|Experiment|NothingLost|ExactResume)\.|HostBackend|^Host')
  [ -z "$wrong" ] || fail "host-backend tests in the CUDA selection: $wrong"
  for name in RendezvousProbe KernelStampsBoth Events.ElapsedTime; do
    echo "$chosen" | grep -q "$name" || fail "no $name test selected"
    echo "$chosen" | grep "$name" | grep -qvE -- "$timing" && fail "$name runs beside other tests (not in '$timing')"
  done
  # gpu-check builds only some targets: every selected test's program must be one of them.
  build_line=$(echo "$out" | grep "would run: cmake --build --preset gpu --target")
  programs=$(ctest --test-dir "$build" --show-only=json-v1 -R "$select" -LE "$labels" |
             python3 -c 'import json, os, sys
print("\n".join(sorted({os.path.basename(t["command"][0]) for t in json.load(sys.stdin)["tests"]})))')
  [ -n "$programs" ] || fail "no program holds the selected tests"
  for program in $programs; do
    echo "$build_line" | grep -qw -- "$program" || fail "the CUDA tests of $program are selected, but gpu-check does not build it"
  done
  echo "CUDA selection: $(echo "$chosen" | grep -c .) of $(echo "$all" | grep -c .) tests, in $(echo $programs)"
else
  echo "note: no discovered tests in '${build:-no build dir}': selection checked by its text only"
fi

# The checks can fail: a copy with a step over budget is refused; a new chapter folder is
# detected and run.
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -r scripts "$copy/"
mkdir -p "$copy/chapters" "$copy/bench"
for dir in chapters/[0-9][0-9]_*/; do mkdir -p "$copy/$dir"; done
mkdir -p "$copy/chapters/08_sharded"
cp bench/torch_cifar10_gpu.py "$copy/bench/"
more=$(cd "$copy" && PATH="/usr/bin:/bin" OUT= scripts/gpu-check --dry-run 2>&1) || { out=$more; fail "dry run failed with an 08 folder"; }
echo "$more" | grep -qE "would run: build-gpu/bin/08_sharded --backend cuda" || { out=$more; fail "chapter 08_sharded not detected"; }
echo "$more" | grep -q "would check: ZeRO = chapter 4" || { out=$more; fail "chapter 8 not compared with chapter 4"; }
printf 'step "too long" 100 && { run_bench "sleep" 100 sleep 100; }\n' > "$copy/scripts/gpu-bench.d/75-too-long.sh"
over=$(cd "$copy" && PATH="/usr/bin:/bin" OUT= scripts/gpu-check --dry-run 2>&1) && { out=$over; fail "a plan over 540 s was accepted"; }
echo "$over" | grep -q "over the 540 s" || { out=$over; fail "no reason given for a plan over 540 s"; }

# The PyTorch script at least parses (torch itself is not needed for that).
python3 -m py_compile bench/torch_cifar10_gpu.py 2>&1 || fail "bench/torch_cifar10_gpu.py does not compile"
python3 bench/torch_cifar10_gpu.py --help >/dev/null || fail "torch_cifar10_gpu.py --help needs torch"
# An unknown argument is refused with a hint.
bad=$(scripts/gpu-check --dyr-run 2>&1) && fail "an unknown argument was accepted"
echo "$bad" | grep -q -- "--dry-run" || fail "no hint for an unknown argument: $bad"
echo "PASS: $(echo "$out" | grep -c '^step') steps, $(echo "$out" | grep -c 'would run') commands, $total s of 540 s"

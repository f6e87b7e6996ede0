#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/gpu-check --dry-run: runs nothing, writes no results, and lists the sections a
# 15-minute lease needs in the order that puts the most valuable first (issue 17).
set -uo pipefail
root=${1:?usage: gpu_check_dry_run_test.sh <source dir>}
cd "$root"
fail() { echo "FAIL: $*"; echo "--- output:"; echo "$out"; exit 1; }

results_before=$(ls bench/results 2>/dev/null | sort)
had_build_gpu=$([ -d build-gpu ] && echo yes || echo no)
out=$(PATH="/usr/bin:/bin" scripts/gpu-check --dry-run 2>&1) || fail "exit status $?"

[ "$(ls bench/results 2>/dev/null | sort)" = "$results_before" ] || fail "a dry run wrote bench/results"
[ "$had_build_gpu" = yes ] || [ ! -d build-gpu ] || fail "a dry run made build-gpu"
echo "$out" | grep -q "CUDA_MODULE_LOADING=EAGER" || fail "eager module loading not listed"

# Each line that must appear, in this order (extended regexes).
expected=(
  "would run: cmake --preset gpu"
  "would run: cmake --build --preset gpu"
  "would run: ctest --preset gpu -R .*--timeout 90"
  "would run: .*01_single_gpu --backend cuda"
  "would run: .*03_stream_towers --backend cuda --towers-per-device 4 .*--probe"
  "would check: rendezvous=met"
  "would check: concurrency_from=kernel_stamps"
  "would check: max_concurrent_towers=4"
  "would run: .*03_stream_towers --backend cuda --towers-per-device 4 --steps 20 --batch-size 32 --log-every 10 \\(timeout"
  "would check: max_concurrent_towers>=2"
  "would run: .*02_serial_towers --backend cuda"
  "would check: rendezvous=timeout"
  "would run: .*04_nccl_iterator --backend cuda --devices 1 --towers-per-device 4"
  "would check: allreduce=ring"
  "would run: .*bench_train --backend cuda --batch-size 128"
  "would run: .*bench_train --backend cuda --batch-size 512"
  "would run: python3 bench/torch_cifar10_gpu.py --batch-sizes 128,512"
  "would run: compute-sanitizer --tool memcheck"
  "would check: same_loss=yes"
  "would check: wrong=0"
  "would run: ctest --preset gpu -E .* -LE slow"
)
line=0
for pattern in "${expected[@]}"; do
  found=$(echo "$out" | tail -n +"$((line + 1))" | grep -nE -m1 -- "$pattern" | cut -d: -f1)
  [ -n "$found" ] || fail "missing, or out of order: $pattern"
  line=$((line + found))
done

# Every bench script in scripts/gpu-bench.d contributes a command.
for b in scripts/gpu-bench.d/*.sh; do
  grep -q '^run_bench\|^  run_bench' "$b" || fail "$b runs nothing"
done
# The PyTorch script at least parses (torch itself is not needed for that).
python3 -m py_compile bench/torch_cifar10_gpu.py 2>&1 || fail "bench/torch_cifar10_gpu.py does not compile"
python3 bench/torch_cifar10_gpu.py --help >/dev/null || fail "torch_cifar10_gpu.py --help needs torch"

# An unknown argument is refused with a hint.
bad=$(scripts/gpu-check --dyr-run 2>&1) && fail "an unknown argument was accepted"
echo "$bad" | grep -q -- "--dry-run" || fail "no hint for an unknown argument: $bad"
echo "PASS: $(echo "$out" | grep -c 'would run') commands listed in order"

# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check: one short chapter under compute-sanitizer's memcheck —
# out-of-bounds and misaligned accesses, errors of CUDA calls — two towers sharing a GPU
# for two steps. About 60 s on one H200 (memcheck slows kernels by 10-100x).
if [ "$dry_run" = 1 ] || command -v compute-sanitizer >/dev/null 2>&1; then
  run_bench "compute-sanitizer memcheck: chapter 3, 2 towers on one GPU, 2 steps" 180 \
    compute-sanitizer --tool memcheck --error-exitcode 99 \
    $bin/03_stream_towers --backend cuda --devices 1 --towers-per-device 2 --steps 2 --batch-size 16 --log-every 1
  expect towers=2
else
  record skip "compute-sanitizer: not on PATH (it ships with the CUDA toolkit)"
fi

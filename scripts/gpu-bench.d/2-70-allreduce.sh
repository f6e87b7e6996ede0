# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 2: the all-reduce from 4 KB to 64 MB, NCCL and the
# ring on every GPU, then two towers on one GPU (ring only: NCCL wants one rank per GPU).
step "all-reduce: NCCL and the ring" 8 && {
  run_bench "All-reduce, one tower per GPU (NCCL and ring)" 4 \
    $bin/bench_allreduce --backend cuda
  expect wrong=0
  run_bench "All-reduce, 2 towers on the GPUs (ring)" 4 \
    $bin/bench_allreduce --backend cuda --towers 2
  expect wrong=0
}

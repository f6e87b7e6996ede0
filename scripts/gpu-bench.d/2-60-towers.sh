# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 2: chapter 2 (serial) vs chapter 3 (streams) with 4
# towers sharing one GPU, batch 16 each: small kernels that leave room on the GPU, so
# streams can overlap them. Runs each chapter twice (8 program starts).
step "towers: serial vs streams, 4 towers on one GPU" 12 && {
  run_bench "Serial vs stream towers: 4 towers on one GPU, batch 16" 12 \
    $bin/bench_towers --backend cuda --devices 1 --towers-per-device 4 \
    --batch-size 16 --steps 20 --repeats 2
  expect same_loss=yes
}

# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check: one tower's training step on one GPU (forward + backward
# + SGD), images/s and the per-op breakdown, at the tutorial's batch 128 and at 512.
# About 15 s on one H200, most of it start-up.
run_bench "Training throughput, one GPU, batch 128" \
  build-gpu/bin/bench_train --backend cuda --batch-size 128 --warmup 5 --steps 50
run_bench "Training throughput, one GPU, batch 512" \
  build-gpu/bin/bench_train --backend cuda --batch-size 512 --warmup 5 --steps 30

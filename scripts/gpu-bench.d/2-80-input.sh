# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 2: chapter 4's input pipeline on one GPU. One iterator
# and two sharing a pool (4 threads), against what one tower's training step consumes;
# then the step fed by an iterator against pre-made device batches (target: ratio <= 1.05).
# The host side (distortion on 4 threads) is most of it.
step "input: the iterators against the training step" 10 && {
  run_bench "Input pipeline vs training, one GPU, batch 128" 10 \
    $bin/bench_input --backend cuda --devices 1 --towers 2 --batch-size 128 \
    --warmup 5 --steps 20
  expect same_loss=yes bad=0
}

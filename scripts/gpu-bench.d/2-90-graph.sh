# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 2: chapter 3's eager enqueue against chapter 7's
# graph launch, host time per step, 1 to 8 towers sharing one GPU at batch 4, where launch
# cost matters. --towers-per-device 8 is the most per device: every row puts its towers on
# one GPU (tests/scripts: scripts.GraphBenchLayoutOfGpuCheck runs these rows on the host).
step "graph: eager enqueue vs graph launch" 8 && {
  run_bench "Eager enqueue vs graph launch: 1-8 towers on one GPU, batch 4" 8 \
    $bin/bench_graph --backend cuda --towers 1 2 4 8 --towers-per-device 8 \
    --batch-size 4 --steps 10
  expect wrong=0
}

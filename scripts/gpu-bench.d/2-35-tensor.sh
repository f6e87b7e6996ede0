# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 2: chapter 10 on the GPU. 2 tensor ranks, then 2
# hybrid towers, on two streams of one GPU (the ring: NCCL refuses two ranks on one GPU):
# the split's cuBLAS products on each rank's columns and rows, the ring's sums, the
# rendezvous of the ranks' streams, and no byte counted on the wire (the two ranks share
# the GPU). Then one rank, whose products and sums are chapter 4's single tower's: the
# same parameters, bit for bit. Short runs (2 steps of batch 8): mostly their start.
tensor="$bin/10_tensor --backend cuda --devices 1 --steps 2 --batch-size 8 --log-every 1"
step "chapter 10 on cuda: tensor parallel, the hybrid, one rank = chapter 4" 14 && {
  run_bench "Chapter 10: --tp 2 on two streams of one GPU (the ring), probe" 4 \
    $tensor --tp 2 --probe
  expect mode=tp collectives=ring towers=2 rendezvous=met wire_bytes_per_step=0.0
  run_bench "Chapter 10: --hybrid, 2 towers on two streams of one GPU (the ring)" 4 \
    $tensor --towers-per-device 2 --hybrid
  expect mode=hybrid collectives=ring towers=2
  run_bench "Chapter 10: --tp 1" 3 $tensor --save-params "$(params ch10-tp1)"
  run_bench "Chapter 4: one tower (chapter 10's reference)" 3 \
    $bin/04_nccl_iterator --backend cuda --devices 1 --steps 2 --batch-size 8 --log-every 1 \
    --save-params "$(params ch4-one)"
  same_bits "chapter 10 --tp 1 = chapter 4's one tower" "$(params ch10-tp1)" "$(params ch4-one)"
}

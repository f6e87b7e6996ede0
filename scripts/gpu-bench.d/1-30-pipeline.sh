# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 1: chapter 9 on cuda. The synthetic stages, 4 on 4
# streams of one GPU, the stand-in kernels spinning on the GPU's clock, under 1F1B and
# GPipe with --probe: the order, the data, the activations held and the rendezvous are
# exact; the bubble is a measurement (the host tests hold it to the formula; the probe's
# wait counts as busy time), so it is not checked here. Then the real model, --model
# cifar, 2 stages of 4 micro-batches: its parameters equal chapter 1 --accumulate 4's,
# bit for bit (the hand-offs, mailboxes and slot reuse on a GPU).
pipeline="$bin/09_pipeline --backend cuda --devices 1"

step "chapter 9 on cuda: probes, and --model cifar = chapter 1" 25 && {
  run_bench "Chapter 9: 4 stages on 4 streams of one GPU, 1F1B, 8 micro-batches, probe" 6 \
    $pipeline --schedule 1f1b --stages 4 --micro-batches 8 --probe
  expect order_violations=0 data_checked=yes peak_activations_per_stage=4,3,2,1
  expect rendezvous=met probe_concurrent_stages=4 bubble_formula=0.273
  run_bench "Chapter 9: 4 stages, GPipe, 8 micro-batches, probe" 6 \
    $pipeline --schedule gpipe --stages 4 --micro-batches 8 --probe
  expect order_violations=0 data_checked=yes peak_activations_per_stage=8,8,8,8 rendezvous=met
  run_bench "Chapter 9: --model cifar, 2 stages, 4 micro-batches, 2 steps of batch 8" 8 \
    $pipeline --model cifar --stages 2 --micro-batches 4 --batch-size 8 --steps 2 \
    --save-params "$(params ch9-cifar)"
  run_bench "Chapter 1: --accumulate 4, 2 steps of batch 8 (chapter 9's reference)" 6 \
    $bin/01_single_gpu --backend cuda --accumulate 4 --batch-size 8 --steps 2 \
    --save-params "$(params ch1-accumulate)"
  same_bits "chapter 9 --model cifar = chapter 1 --accumulate 4" "$(params ch9-cifar)" "$(params ch1-accumulate)"
}

# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check: the chapters themselves on the GPU, each checked by its
# summary. About 70 s on one H200, most of it chapter 1's 600 steps and its eval.
run_bench "Chapter 1 on the GPU: 600 steps of batch 128, then eval (the tutorial's setup)" 150 \
  $bin/01_single_gpu --backend cuda --steps 600 --batch-size 128 --log-every 100 --eval
run_bench "Chapter 3 on one GPU: 4 towers on 4 streams, concurrency probe" 90 \
  $bin/03_stream_towers --backend cuda --towers-per-device 4 --steps 20 --batch-size 32 --log-every 10 --probe
expect rendezvous=met probe_concurrent_towers=4 towers=4
# The probe kernels stamp themselves too: if they met, their stamps overlap, so the stamps
# must count all 4 (a check of the stamps against the proof). The streams all held work.
expect concurrency_from=kernel_stamps max_concurrent_towers=4 stream_concurrent_towers=4
# Without the probe, only the model's own kernels stamp: did they run together on one GPU?
# A measurement (it depends on how much of the GPU each kernel leaves free), at least 2
# expected at batch 32; stream_concurrent_towers is 4 whatever ran.
run_bench "Chapter 3 on one GPU: 4 towers, no probe: the model's kernels' own stamps" 90 \
  $bin/03_stream_towers --backend cuda --towers-per-device 4 --steps 20 --batch-size 32 --log-every 10
expect concurrency_from=kernel_stamps stream_concurrent_towers=4
expect_at_least max_concurrent_towers=2
# The serial loop waits for each tower before starting the next: the probe must time out.
run_bench "Chapter 2 on one GPU: 4 towers, serial loop, concurrency probe" 90 \
  $bin/02_serial_towers --backend cuda --towers-per-device 4 --steps 20 --batch-size 32 --log-every 10 --probe
expect rendezvous=timeout probe_concurrent_towers=1 max_concurrent_towers=1 concurrency_from=kernel_stamps
run_bench "Chapter 4 on one GPU (NCCL with one rank)" 90 \
  $bin/04_nccl_iterator --backend cuda --steps 20 --batch-size 32 --log-every 10
expect allreduce=nccl
# Four towers on one GPU: NCCL wants one rank per GPU, so the ring runs inside the chapter.
run_bench "Chapter 4 on one GPU, 4 towers (the ring inside a chapter), concurrency probe" 90 \
  $bin/04_nccl_iterator --backend cuda --devices 1 --towers-per-device 4 --steps 20 --batch-size 32 \
  --log-every 10 --probe
expect rendezvous=met probe_concurrent_towers=4 allreduce=ring towers=4
# Chapter 9: 4 pipeline stages on 4 streams of one GPU, the stand-in kernels spinning on the
# GPU's clock. The order and the activations are exact; the bubble is a measurement (the
# host tests hold it to the formula), so only its formula is checked here.
run_bench "Chapter 9 on one GPU: 4 pipeline stages on 4 streams, 1F1B, 8 micro-batches" 60 \
  $bin/09_pipeline --backend cuda --schedule 1f1b --stages 4 --micro-batches 8
expect order_violations=0 data_checked=yes peak_activations_per_stage=4,3,2,1 bubble_formula=0.273

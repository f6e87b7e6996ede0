# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 1: chapters 0 to 7 on the GPU (chapter 5 runs in call
# 2, under mpiexec), each checked by its summary, with --probe (the towers' kernels meet,
# or the serial loop's do not) and --save-params, then the bits the pages say must match:
# chapter 2 = chapter 3 (the schedule changes no bit), overlap on = off = chapter 4 (two
# towers), graph replay = eager (chapter 7 = chapter 3). Small runs: 6 steps of batch 32,
# so each program is mostly its start (a few seconds on one H200).
small="--steps 6 --batch-size 32 --log-every 3"
one_gpu="--backend cuda --devices 1"

step "chapters 0-3 on cuda, probe and parameters" 30 && {
  run_bench "Chapter 0: 4 towers on 4 streams, 20 ms kernels, sync then enqueue" 10 \
    $bin/00_streams $one_gpu --towers-per-device 4 --kernel-ms 20
  expect max_concurrent_towers=1 max_concurrent_towers=4
  run_bench "Chapter 1: one tower, 100 steps of batch 128, then eval" 12 \
    $bin/01_single_gpu --backend cuda --steps 100 --batch-size 128 --log-every 50 --eval
  run_bench "Chapter 2: 4 towers on one GPU, serial loop, probe" 10 \
    $bin/02_serial_towers $one_gpu --towers-per-device 4 $small --probe --save-params "$(params ch2)"
  # The serial loop waits for each tower before starting the next: the probe must time out.
  expect rendezvous=timeout probe_concurrent_towers=1 max_concurrent_towers=1 concurrency_from=kernel_stamps
  run_bench "Chapter 3: 4 towers on 4 streams of one GPU, probe" 10 \
    $bin/03_stream_towers $one_gpu --towers-per-device 4 $small --probe --save-params "$(params ch3)"
  expect rendezvous=met probe_concurrent_towers=4 towers=4 stream_concurrent_towers=4
  # The probe kernels stamp themselves too: if they met, their stamps overlap.
  expect concurrency_from=kernel_stamps max_concurrent_towers=4
  same_bits "chapter 2 = chapter 3 (the schedule changes no bit)" "$(params ch2)" "$(params ch3)"
  # Without the probe only the model's kernels stamp: did they run together on one GPU?
  # A measurement (at least 2 expected at batch 32), not a proof.
  run_bench "Chapter 3: 4 towers, no probe: the model's kernels' own stamps" 10 \
    $bin/03_stream_towers $one_gpu --towers-per-device 4 $small
  expect_at_least max_concurrent_towers=2
  # Every traced op's stamps were read back: none counted as idle for a lost stamp.
  expect lost_stamp_ops=0
}

step "chapters 4, 6, 7 on cuda, and their bits" 30 && {
  # NCCL with one rank moves no byte: this proves only that the chapter's NCCL path starts
  # and ends on a GPU (the CUDA tests skip NCCL below two GPUs).
  run_bench "Chapter 4: one tower, NCCL with one rank" 10 \
    $bin/04_nccl_iterator $one_gpu --towers-per-device 1 $small
  expect allreduce=nccl
  # NCCL wants one rank per GPU, so towers sharing a GPU take the ring inside the chapter.
  run_bench "Chapter 4: 2 towers on one GPU (the ring), probe" 10 \
    $bin/04_nccl_iterator $one_gpu --towers-per-device 2 $small --probe --save-params "$(params ch4)"
  expect rendezvous=met probe_concurrent_towers=2 allreduce=ring
  run_bench "Chapter 6: overlap on, 2 towers on one GPU, probe" 10 \
    $bin/06_overlap $one_gpu --towers-per-device 2 $small --probe --save-params "$(params ch6-on)"
  expect rendezvous=met comm_rendezvous=met overlap_mode=on
  run_bench "Chapter 6: overlap off, 2 towers on one GPU" 10 \
    $bin/06_overlap $one_gpu --towers-per-device 2 $small --overlap off --save-params "$(params ch6-off)"
  expect overlap_mode=off buckets=1
  same_bits "chapter 6: overlap on = off" "$(params ch6-on)" "$(params ch6-off)"
  same_bits "chapter 6 = chapter 4 (two towers)" "$(params ch4)" "$(params ch6-off)"
  # The capture prepares every stream that joins it (the meeting stream made its cuBLAS
  # handle inside the capture once, which CUDA refuses): this run is the proof on a GPU.
  run_bench "Chapter 7: 4 towers as one graph, probe in every replay" 10 \
    $bin/07_graph $one_gpu --towers-per-device 4 $small --probe --save-params "$(params ch7)"
  expect rendezvous=met probe_concurrent_towers=4 tower_bodies_run=4
  same_bits "graph replay = eager (chapter 7 = chapter 3)" "$(params ch3)" "$(params ch7)"
}

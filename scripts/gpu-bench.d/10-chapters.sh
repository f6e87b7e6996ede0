# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check: every chapter on the GPU, each checked by its summary, with
# --probe (the towers' kernels meet, or the serial loop's do not) and --save-params, then
# the bits the pages say must match: chapter 2 = chapter 3 (the schedule changes no bit),
# graph replay = eager (chapter 7 = chapter 3), overlap on = off = chapter 4 (two towers),
# ZeRO = chapter 4 (chapter 8, when it exists). Small runs: 6 steps of batch 32, so each
# program is mostly its start (a few seconds on one H200).
small="--steps 6 --batch-size 32 --log-every 3"
one_gpu="--backend cuda --devices 1"

step "chapters 0-3 on cuda, probe and parameters" 50 && {
  run_bench "Chapter 0: 4 towers on 4 streams, 20 ms kernels, sync then enqueue" 15 \
    $bin/00_streams $one_gpu --towers-per-device 4 --kernel-ms 20
  expect max_concurrent_towers=1 max_concurrent_towers=4
  run_bench "Chapter 1: one tower, 300 steps of batch 128, then eval" 25 \
    $bin/01_single_gpu --backend cuda --steps 300 --batch-size 128 --log-every 100 --eval
  run_bench "Chapter 2: 4 towers on one GPU, serial loop, probe" 15 \
    $bin/02_serial_towers $one_gpu --towers-per-device 4 $small --probe --save-params "$(params ch2)"
  # The serial loop waits for each tower before starting the next: the probe must time out.
  expect rendezvous=timeout probe_concurrent_towers=1 max_concurrent_towers=1 concurrency_from=kernel_stamps
  run_bench "Chapter 3: 4 towers on 4 streams of one GPU, probe" 15 \
    $bin/03_stream_towers $one_gpu --towers-per-device 4 $small --probe --save-params "$(params ch3)"
  expect rendezvous=met probe_concurrent_towers=4 towers=4 stream_concurrent_towers=4
  # The probe kernels stamp themselves too: if they met, their stamps overlap.
  expect concurrency_from=kernel_stamps max_concurrent_towers=4
  same_bits "chapter 2 = chapter 3 (the schedule changes no bit)" "$(params ch2)" "$(params ch3)"
  # Without the probe only the model's kernels stamp: did they run together on one GPU?
  # A measurement (at least 2 expected at batch 32), not a proof.
  run_bench "Chapter 3: 4 towers, no probe: the model's kernels' own stamps" 15 \
    $bin/03_stream_towers $one_gpu --towers-per-device 4 $small
  expect_at_least max_concurrent_towers=2
  # Every traced op's stamps were read back: none counted as idle for a lost stamp.
  expect lost_stamp_ops=0
}

# Chapters past 7 are detected, not assumed: a chapter folder whose program no script in
# gpu-bench.d names gets a generic run here, with --probe and --save-params when its
# --help lists them.
extra_chapters=()
for dir in chapters/[0-9][0-9]_*/; do
  name=$(basename "$dir")
  [ "${name%%_*}" -ge 8 ] || continue
  grep -qs -- "\$bin/$name " scripts/gpu-bench.d/*.sh || extra_chapters+=("$name")
done

step "chapters 4, 6, 7${extra_chapters[*]:+, ${extra_chapters[*]}} on cuda, and their bits" $((50 + 12 * ${#extra_chapters[@]})) && {
  run_bench "Chapter 4: one tower, NCCL with one rank" 15 \
    $bin/04_nccl_iterator $one_gpu --towers-per-device 1 $small
  expect allreduce=nccl
  # NCCL wants one rank per GPU, so towers sharing a GPU take the ring inside the chapter.
  run_bench "Chapter 4: 2 towers on one GPU (the ring), probe" 15 \
    $bin/04_nccl_iterator $one_gpu --towers-per-device 2 $small --probe --save-params "$(params ch4)"
  expect rendezvous=met probe_concurrent_towers=2 allreduce=ring
  run_bench "Chapter 6: overlap on, 2 towers on one GPU, probe" 15 \
    $bin/06_overlap $one_gpu --towers-per-device 2 $small --probe --save-params "$(params ch6-on)"
  expect rendezvous=met comm_rendezvous=met overlap_mode=on
  run_bench "Chapter 6: overlap off, 2 towers on one GPU" 12 \
    $bin/06_overlap $one_gpu --towers-per-device 2 $small --overlap off --save-params "$(params ch6-off)"
  expect overlap_mode=off buckets=1
  same_bits "chapter 6: overlap on = off" "$(params ch6-on)" "$(params ch6-off)"
  same_bits "chapter 6 = chapter 4 (two towers)" "$(params ch4)" "$(params ch6-off)"
  run_bench "Chapter 7: 4 towers as one graph, probe in every replay" 15 \
    $bin/07_graph $one_gpu --towers-per-device 4 $small --probe --save-params "$(params ch7)"
  expect rendezvous=met probe_concurrent_towers=4 tower_bodies_run=4
  same_bits "graph replay = eager (chapter 7 = chapter 3)" "$(params ch3)" "$(params ch7)"
  for name in "${extra_chapters[@]}"; do
    program=$bin/$name
    flags=()
    if [ "$dry_run" = 1 ]; then
      echo "  (--probe and --save-params below only where $name --help lists them)"
      flags=(--probe --save-params "$(params "$name")")
    else
      has_flag "$program" --probe && flags+=(--probe)
      has_flag "$program" --save-params && flags+=(--save-params "$(params "$name")")
    fi
    run_bench "Chapter ${name%%_*} ($name): 2 towers on one GPU" 12 \
      "$program" $one_gpu --towers-per-device 2 $small "${flags[@]}"
    [[ " ${flags[*]} " == *" --probe "* ]] && expect rendezvous=met
    if [ "${name%%_*}" = 08 ] && [[ " ${flags[*]} " == *" --save-params "* ]]; then
      same_bits "ZeRO = chapter 4 (chapter 8, two towers)" "$(params ch4)" "$(params "$name")"
    fi
  done
}

# Chapter 9: 4 pipeline stages on 4 streams of one GPU, the stand-in kernels spinning on the
# GPU's clock. The order, the data, the activations held and the rendezvous are exact; the
# bubble is a measurement (the host tests hold it to the formula; the probe's wait counts
# as busy time), so it is not checked here.
# Chapter 10: 2 tensor ranks, then 2 hybrid towers, on two streams of one GPU (the ring:
# NCCL refuses two ranks on one GPU): the split's cuBLAS products and the ring's sums, its
# rendezvous, and the bytes the ring counted against the closed form. Two short runs
# (2 steps of batch 8), mostly their start.
step "chapters 9 and 10 on cuda: stages, order, data, probe; the split layers" 18 && {
  run_bench "Chapter 9: 4 pipeline stages on 4 streams of one GPU, 1F1B, 8 micro-batches, probe" 12 \
    $bin/09_pipeline --backend cuda --devices 1 --schedule 1f1b --stages 4 --micro-batches 8 --probe
  expect order_violations=0 data_checked=yes peak_activations_per_stage=4,3,2,1
  expect rendezvous=met probe_concurrent_stages=4 bubble_formula=0.273
  run_bench "Chapter 10: --tp 2 on two streams of one GPU (the ring), probe" 10 \
    $bin/10_tensor --backend cuda --devices 1 --tp 2 --steps 2 --batch-size 8 --log-every 1 --probe
  expect mode=tp collectives=ring rendezvous=met wire_bytes_per_step=0.0
  run_bench "Chapter 10: --hybrid, 2 towers on two streams of one GPU (the ring)" 10 \
    $bin/10_tensor --backend cuda --devices 1 --towers-per-device 2 --hybrid --steps 2 \
    --batch-size 8 --log-every 1
  expect mode=hybrid collectives=ring towers=2
}

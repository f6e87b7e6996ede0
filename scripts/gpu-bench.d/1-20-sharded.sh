# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 1: chapter 8 at every ZeRO stage on cuda, 2 towers
# sharing one GPU (the ring, as chapter 4's 2 towers): each stage, and ZeRO-3 without its
# prefetch, ends with chapter 4's parameters bit for bit (the same adds in the same order);
# Adam sharded (ZeRO-3: its moments, the gradients and the parameters) ends with Adam
# unsharded's. The ledger on cuda counts the runtime's workspaces (each stream's cuBLAS
# workspace, the kernel-stamp ring) in a line of their own.
sharded="$bin/08_sharded --backend cuda --devices 1 --towers-per-device 2 --steps 6 --batch-size 32 --log-every 3"

step "chapter 8 on cuda: ZeRO 0-3, prefetch off, Adam, bits" 35 && {
  run_bench "Chapter 8: ZeRO-0, probe" 6 $sharded --zero 0 --probe --save-params "$(params ch8-zero0)"
  expect zero=0 rendezvous=met
  expect_at_least peak_workspace_bytes=1
  for stage in 1 2 3; do
    run_bench "Chapter 8: ZeRO-$stage" 6 $sharded --zero $stage --save-params "$(params ch8-zero$stage)"
    expect zero=$stage
  done
  run_bench "Chapter 8: ZeRO-3, gather prefetch off" 6 \
    $sharded --zero 3 --gather-prefetch off --save-params "$(params ch8-zero3-off)"
  expect zero=3 gather_prefetch=off
  for stage in 0 1 2 3; do
    same_bits "ZeRO-$stage = chapter 4 (two towers)" "$(params ch4)" "$(params ch8-zero$stage)"
  done
  same_bits "ZeRO-3 with --gather-prefetch off = chapter 4" "$(params ch4)" "$(params ch8-zero3-off)"
  run_bench "Chapter 8: Adam, unsharded (ZeRO-0)" 6 \
    $sharded --zero 0 --optimizer adam --save-params "$(params ch8-adam0)"
  run_bench "Chapter 8: Adam, sharded (ZeRO-3)" 6 \
    $sharded --zero 3 --optimizer adam --save-params "$(params ch8-adam3)"
  expect optimizer=adam
  same_bits "Adam sharded (ZeRO-3) = Adam unsharded (ZeRO-0)" "$(params ch8-adam0)" "$(params ch8-adam3)"
}

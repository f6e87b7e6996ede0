# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check: the chapters themselves on the GPU.
run_bench "Chapter 1 on the GPU: 600 steps of batch 128, then eval (the tutorial's setup)" \
  build-gpu/bin/01_single_gpu --backend cuda --steps 600 --batch-size 128 --log-every 100 --eval
run_bench "Chapter 3 on one GPU: 4 towers on 4 streams, concurrency probe" \
  build-gpu/bin/03_stream_towers --backend cuda --towers-per-device 4 --steps 20 --batch-size 32 --log-every 10 --probe
run_bench "Chapter 2 on one GPU: 4 towers, serial loop, concurrency probe" \
  build-gpu/bin/02_serial_towers --backend cuda --towers-per-device 4 --steps 20 --batch-size 32 --log-every 10 --probe
if [ -x build-gpu/bin/04_nccl_iterator ]; then
  run_bench "Chapter 4 on one GPU (NCCL with one rank)" \
    build-gpu/bin/04_nccl_iterator --backend cuda --steps 20 --batch-size 32 --log-every 10
fi

# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 2: one tower's training step on one GPU (forward +
# backward + SGD), images/s and the per-op breakdown at batch 128 and 512; then the PyTorch
# twin on the same GPU, same model, FP32 with TF32 off (bench/torch_cifar10_gpu.py), in
# eager mode only: eager is what is compared, and torch.compile's first compile takes
# minutes. --no-pytorch: bench_train's own comparison runs PyTorch on the CPU, not what we
# want here.
step "train: bench_train against the PyTorch eager twin" 35 && {
  run_bench "Training throughput, one GPU, batch 128" 8 \
    $bin/bench_train --backend cuda --batch-size 128 --warmup 5 --steps 40 --no-pytorch
  expect loss_falls=yes
  run_bench "Training throughput, one GPU, batch 512" 9 \
    $bin/bench_train --backend cuda --batch-size 512 --warmup 5 --steps 20 --no-pytorch
  expect loss_falls=yes
  if [ "$dry_run" = 1 ] || timeout 15 python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
      >/dev/null 2>&1; then
    run_bench "PyTorch eager twin on the same GPU: FP32, TF32 off, batch 128 and 512" 18 \
      python3 bench/torch_cifar10_gpu.py --modes eager --batch-sizes 128,512 --warmup 5 --steps 30
    expect "mode=eager batch_size=128" "mode=eager batch_size=512" loss_falls=yes
  else
    record skip "PyTorch twin: python3 cannot import torch with CUDA (pip install torch)"
  fi
}

# SPDX-License-Identifier: MIT
"""The tutorial's CIFAR-10 model trained in PyTorch on one GPU: bench_train --backend cuda's yardstick.

    python3 bench/torch_cifar10_gpu.py --batch-sizes 128,512 --warmup 10 --steps 50

The model, loss and SGD step are bench/torch_cifar10.py's (the same model as towers'
chapter 1). For a fair comparison with towers, which computes in plain FP32:

- FP32 throughout, TF32 off for matrix products and convolutions (PyTorch would
  otherwise use TF32 for convolutions by default on Ampere and later);
- one fixed random batch resident on the GPU, so no input pipeline is timed;
- each step timed from its start to the end of its GPU work (torch.cuda.synchronize),
  median and best over --steps after --warmup, as bench_train times towers' steps.

Runs eager mode, then torch.compile when it is available and works (its compile time is
spent in the warm-up and reported apart). One summary line per mode and batch size:

    summary: framework=pytorch device=cuda mode=eager batch_size=128 images_per_sec=...
"""
import argparse
import os
import statistics
import sys
import time


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", default="128,512",
                        help="comma-separated batch sizes (default: 128,512)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--modes", default="eager,compile",
                        help="eager, compile or both (default); compile is skipped, "
                             "with a line saying why, where torch.compile fails")
    return parser.parse_args()


def train_step_fn(torch, net, decayed, optimizer, images, labels):
    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(net(images), labels)
        loss = loss + 0.004 * sum((w * w).sum() / 2 for w in decayed)
        loss.backward()
        optimizer.step()
        return loss
    return step


def measure(torch, model, mode, batch_size, warmup, steps):
    """Returns (median s, best s, first loss, last loss, warm-up s)."""
    torch.manual_seed(1)
    net = model().cuda()
    decayed = [net[9].weight, net[11].weight]  # local3, local4
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    images = torch.randn(batch_size, 3, 24, 24, device="cuda")
    labels = torch.randint(0, 10, (batch_size,), device="cuda")
    step = train_step_fn(torch, net, decayed, optimizer, images, labels)
    if mode == "compile":
        step = torch.compile(step)

    warm_start = time.perf_counter()
    first_loss = None
    for _ in range(max(1, warmup)):
        loss = step()
        if first_loss is None:
            first_loss = loss.item()
    torch.cuda.synchronize()
    warmup_s = time.perf_counter() - warm_start

    times = []
    for _ in range(steps):
        start = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), first_loss, loss.item(), warmup_s


def main():
    args = parse_args()
    import torch  # here, so --help works without torch
    if not torch.cuda.is_available():
        print("torch_cifar10_gpu: torch cannot see a CUDA GPU; nothing to measure.", file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_cifar10 import model

    # FP32 as towers computes it: no TF32 anywhere.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")

    gpu = torch.cuda.get_device_name(0)
    print(f"# pytorch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN "
          f"{torch.backends.cudnn.version()}, on {gpu}; FP32, TF32 off")
    print("| mode | batch | median ms | best ms | images/s | warm-up s | loss first -> last |")
    print("|---|---:|---:|---:|---:|---:|---|")
    status = 0
    for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
        if mode == "compile" and not hasattr(torch, "compile"):
            print(f"# compile: skipped, torch {torch.__version__} has no torch.compile")
            continue
        for batch_size in [int(b) for b in args.batch_sizes.split(",")]:
            try:
                med, best, first, last, warm = measure(torch, model, mode, batch_size,
                                                       args.warmup, args.steps)
            except Exception as error:  # torch.compile needs a compiler toolchain; say so
                print(f"# {mode} at batch {batch_size}: skipped, {type(error).__name__}: "
                      f"{str(error).splitlines()[0] if str(error) else ''}")
                if mode == "eager":
                    status = 1
                continue
            falls = "yes" if last < first else "no"
            print(f"| {mode} | {batch_size} | {med * 1e3:.3f} | {best * 1e3:.3f} | "
                  f"{batch_size / med:.1f} | {warm:.1f} | {first:.4f} -> {last:.4f} |")
            print(f"summary: framework=pytorch device=cuda mode={mode} batch_size={batch_size} "
                  f"images_per_sec={batch_size / med:.1f} images_per_sec_best={batch_size / best:.1f} "
                  f"step_ms={med * 1e3:.3f} loss_falls={falls} tf32=off", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())

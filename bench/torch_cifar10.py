# SPDX-License-Identifier: MIT
"""The tutorial's CIFAR-10 model trained in PyTorch on the CPU: bench_train's yardstick.

    python3 bench/torch_cifar10.py --threads 2 --batch-size 128 --warmup 5 --steps 50

Times forward + backward + SGD on one fixed random batch, the way bench_train times
towers (each step from its start to its end, median and best), and ends with

    summary: framework=pytorch version=2.x.y threads=2 batch_size=128 images_per_sec=... ...

The yardstick is PyTorch at its best on this machine, so the same run times each form
of the model and reports the fastest (`variant=`; a `# variant` line each):
  - `module_lrn`: nn.LocalResponseNorm, which on the CPU runs as a 3-d average pool
    over the squares (slow on some machines);
  - `sums_lrn`: the same LRN written as a sum of 9 shifted slices of the squares;
  - each of them `.eager` and, unless --no-compile, `.compiled` (torch.compile of the
    model; its compile is done in the warm-up, untimed; a form that fails to compile is
    reported and left out).

The model is cifar10.py's: conv 5x5x64 + ReLU, max pool 3x3/2, LRN, conv 5x5x64 + ReLU,
LRN, max pool, local3 (384) + ReLU, local4 (192) + ReLU, softmax_linear (10), weight
decay 0.004 on local3 and local4, learning rate 0.1. Two details differ from TensorFlow
without changing the work: PyTorch's LocalResponseNorm divides alpha by the window size
(so alpha = 0.001 here gives TF's 0.001 / 9), and its pooling pads symmetrically where
TF's SAME pads only after (same output shape, same number of comparisons).
"""
import argparse
import statistics
import time

import torch
from torch import nn


class ShiftedSumLrn(nn.Module):
    """nn.LocalResponseNorm(size, alpha, beta, k) computed as TF does: each channel's
    window of squares is a sum of `size` slices of the squares, shifted by one channel."""

    def __init__(self, size, alpha, beta, k):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x):
        squares = nn.functional.pad(x * x, (0, 0, 0, 0, self.size // 2, (self.size - 1) // 2))
        channels = x.shape[1]
        window = squares[:, 0:channels]
        for shift in range(1, self.size):
            window = window + squares[:, shift:shift + channels]
        return x * (self.k + (self.alpha / self.size) * window).pow(-self.beta)


def lrn(form):
    if form == "sums":
        return ShiftedSumLrn(9, alpha=0.001, beta=0.75, k=1.0)
    return nn.LocalResponseNorm(9, alpha=0.001, beta=0.75, k=1.0)


def model(lrn_form):
    return nn.Sequential(
        nn.Conv2d(3, 64, 5, padding=2), nn.ReLU(),
        nn.MaxPool2d(3, 2, padding=1),
        lrn(lrn_form),
        nn.Conv2d(64, 64, 5, padding=2), nn.ReLU(),
        lrn(lrn_form),
        nn.MaxPool2d(3, 2, padding=1),
        nn.Flatten(),
        nn.Linear(6 * 6 * 64, 384), nn.ReLU(),
        nn.Linear(384, 192), nn.ReLU(),
        nn.Linear(192, 10),
    )


def time_variant(args, lrn_form, compiled):
    """Median and best step seconds, first and last loss, of one form of the model."""
    torch.manual_seed(1)
    net = model(lrn_form)
    decayed = [net[9].weight, net[11].weight]  # local3, local4
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    forward = torch.compile(net) if compiled else net
    images = torch.randn(args.batch_size, 3, 24, 24)
    labels = torch.randint(0, 10, (args.batch_size,))

    def step():
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(forward(images), labels)
        loss = loss + 0.004 * sum((w * w).sum() / 2 for w in decayed)
        loss.backward()
        optimizer.step()
        return time.perf_counter() - start, loss.item()

    first_loss = None
    for _ in range(args.warmup + (2 if compiled else 0)):  # compiled: its compile too
        _, loss = step()
        first_loss = loss if first_loss is None else first_loss
    times = []
    for _ in range(args.steps):
        seconds, loss = step()
        times.append(seconds)
        first_loss = loss if first_loss is None else first_loss
    return statistics.median(times), min(times), first_loss, loss


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--no-compile", action="store_true",
                        help="time the eager forms only (torch.compile needs a C++ compiler "
                             "and takes a minute or more per form)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    results = {}  # variant name -> (median s, best s, first loss, last loss)
    for compiled in [False] if args.no_compile else [False, True]:
        for lrn_form in ["module", "sums"]:
            name = f"{lrn_form}_lrn.{'compiled' if compiled else 'eager'}"
            try:
                results[name] = time_variant(args, lrn_form, compiled)
            except Exception as error:  # a compile that fails leaves its variant out
                print(f"# variant {name}: failed ({type(error).__name__}: "
                      f"{str(error).splitlines()[0] if str(error) else ''}), left out")
                continue
            med, best, first, last = results[name]
            print(f"# variant {name}: median {med * 1e3:.2f} ms, "
                  f"{args.batch_size / med:.1f} images/s, loss {first:.4f} -> {last:.4f}")
    variant = min(results, key=lambda name: results[name][0])
    med, best, first_loss, loss = results[variant]
    print(f"# pytorch {torch.__version__}: {args.threads} threads, batch {args.batch_size}, "
          f"fastest {variant}: median {med * 1e3:.2f} ms, best {best * 1e3:.2f} ms, "
          f"loss {first_loss:.4f} -> {loss:.4f}")
    version = torch.__version__.split("+")[0]  # "2.5.1+cpu" -> "2.5.1"
    print(f"summary: framework=pytorch version={version} threads={args.threads} "
          f"batch_size={args.batch_size} variant={variant} variants={len(results)} "
          f"images_per_sec={args.batch_size / med:.1f} "
          f"images_per_sec_best={args.batch_size / best:.1f} step_ms={med * 1e3:.2f}")


if __name__ == "__main__":
    main()

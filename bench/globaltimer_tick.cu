// SPDX-License-Identifier: MIT
// globaltimer_tick: how often the GPU's nanosecond clock, %globaltimer, actually changes.
//
//   nvcc -O2 -arch=sm_90 -o globaltimer_tick bench/globaltimer_tick.cu && ./globaltimer_tick
//   (or build/bin/bench_globaltimer_tick; scripts/gpu-check compiles and runs it first)
//
// Every towers kernel stamps its start and end with %globaltimer (runtime/kernel_stamps.hpp),
// and the stamp analysis counts towers busy at the same instant. The clock counts in
// nanoseconds but, without a profiler attached, commonly advances in steps of about 1 us:
// a kernel shorter than a step can start and end on the same reading, get zero width and
// drop out of the analysis. This measures the step instead of assuming it.
//
// One thread reads the clock in a tight loop for --ms milliseconds and keeps every change:
//   tick_ns       the smallest change seen: the clock's resolution
//   median_ns     the median change (what a kernel's stamps are typically rounded to)
//   max_ns        the largest change (a gap: the thread was not running, or a slow update)
//   changes       how many changes were seen
// A kernel of one block shorter than median_ns may stamp zero width.
//
// Standalone on purpose (plain CUDA runtime, no towers library), so that gpu-check can
// compile it in seconds before the project is built; it checks every CUDA call itself.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

// Every CUDA call checked: on failure, the file, line, CUDA's message and the call, then exit.
#define TICK_CHECK(call)                                                                  \
  do {                                                                                    \
    const cudaError_t status_ = (call);                                                   \
    if (status_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "globaltimer_tick: CUDA error at %s:%d: %s\n  in %s\n", __FILE__, \
                   __LINE__, cudaGetErrorString(status_), #call);                         \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

constexpr int kMaxChanges = 1 << 16;  // 65 ms of 1 us steps

__device__ unsigned long long globaltimer_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// One thread: records each change of the clock (its size) until `duration_ns` have passed
// or `max_changes` were seen; `count` receives how many.
__global__ void sample_clock(unsigned long long* changes, int max_changes,
                             unsigned long long duration_ns, int* count) {
  const unsigned long long start = globaltimer_ns();
  unsigned long long previous = start;
  int n = 0;
  while (n < max_changes) {
    const unsigned long long now = globaltimer_ns();
    if (now != previous) {
      changes[n++] = now - previous;
      previous = now;
    }
    if (now - start >= duration_ns) break;
  }
  *count = n;
}

int usage(const char* program) {
  std::fprintf(stderr, "usage: %s [--ms MILLISECONDS (1-60, default 20)] [--device N]\n", program);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int ms = 20, device = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--ms" || arg == "--device") && i + 1 < argc) {
      (arg == "--ms" ? ms : device) = std::atoi(argv[++i]);
    } else {
      return usage(argv[0]);
    }
  }
  if (ms < 1 || ms > 60 || device < 0) return usage(argv[0]);

  TICK_CHECK(cudaSetDevice(device));
  unsigned long long* changes = nullptr;
  int* count = nullptr;
  TICK_CHECK(cudaMalloc(&changes, sizeof(unsigned long long) * kMaxChanges));
  TICK_CHECK(cudaMalloc(&count, sizeof(int)));
  // A first run loads the kernel and wakes the GPU from idle clocks; the second is measured.
  for (int run = 0; run < 2; ++run) {
    sample_clock<<<1, 1>>>(changes, kMaxChanges, static_cast<unsigned long long>(ms) * 1000000ull, count);
    TICK_CHECK(cudaGetLastError());
    TICK_CHECK(cudaDeviceSynchronize());
  }
  int n = 0;
  TICK_CHECK(cudaMemcpy(&n, count, sizeof(int), cudaMemcpyDeviceToHost));
  std::vector<unsigned long long> steps(static_cast<std::size_t>(n));
  if (n > 0) {
    TICK_CHECK(cudaMemcpy(steps.data(), changes, sizeof(unsigned long long) * n, cudaMemcpyDeviceToHost));
  }
  TICK_CHECK(cudaFree(changes));
  TICK_CHECK(cudaFree(count));
  if (steps.empty()) {
    std::fprintf(stderr, "globaltimer_tick: the clock never changed in %d ms\n", ms);
    return 1;
  }
  std::sort(steps.begin(), steps.end());
  const unsigned long long tick = steps.front(), median = steps[steps.size() / 2], most = steps.back();
  cudaDeviceProp prop{};
  TICK_CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("# %%globaltimer on %s (device %d), one thread reading it for %d ms\n", prop.name, device, ms);
  std::printf("# %10s  %10s  %10s  %8s\n", "tick_ns", "median_ns", "max_ns", "changes");
  std::printf("  %10llu  %10llu  %10llu  %8d\n", tick, median, most, n);
  std::printf("summary: bench=globaltimer_tick device=%d tick_ns=%llu median_ns=%llu max_ns=%llu changes=%d\n",
              device, tick, median, most, n);
  return 0;
}

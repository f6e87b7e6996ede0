// SPDX-License-Identifier: MIT
// The GPU's nanosecond clock, read by the probe kernels (src/runtime/cuda) and by the
// kernel stamps (launch.cuh): %globaltimer ticks in nanoseconds for the whole device, so
// readings from different blocks and streams of one GPU compare directly.
#pragma once

namespace towers::cuda {

/// %globaltimer now, in nanoseconds.
__device__ inline unsigned long long globaltimer_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

}  // namespace towers::cuda

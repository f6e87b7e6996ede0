// SPDX-License-Identifier: MIT
// The memory ledger against the driver, on a GPU: what the ledger counts is what
// cudaMemGetInfo sees taken, up to the driver's rounding. The bound, for the allocations
// made between two readings of both:
//
//   ledger delta  <=  used delta  <=  ledger delta + one granule per allocation
//
// where a granule is 2 MiB, the page the driver maps device memory in. Allocations of at
// least a granule: smaller ones may land in a page the driver mapped already, and `used`
// would not move. Run serially (RUN_SERIAL; gpu-check's serial group): another process's
// allocation moves `used` too. Skipped, out loud, without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "runtime/graph.hpp"
#include "runtime/runtime.hpp"

namespace towers {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGranule = 2 * kMiB;

#define TOWERS_NEED_GPU()                                                     \
  if (cuda_device_count() == 0) {                                             \
    GTEST_SKIP() << "needs a CUDA device, found 0";                           \
  }

// Bytes of device `ordinal` in use, by anyone, as the driver counts them.
std::size_t used_on_device(int ordinal) {
  std::size_t free_bytes = 0, total_bytes = 0;
  EXPECT_EQ(cudaSetDevice(ordinal), cudaSuccess);
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  return total_bytes - free_bytes;
}

// Both readings at once: the ledger's total and the driver's used bytes.
struct Reading {
  std::size_t ledger = 0, used = 0;
};
Reading read(Device& device) {
  device.synchronize();
  return {device.memory().current_total(), used_on_device(device.index())};
}

// Checks the bound for what was allocated between `before` and `after`.
void expect_within_bound(const Reading& before, const Reading& after, std::size_t allocations,
                         const char* what) {
  const std::size_t ledger = after.ledger - before.ledger;
  const std::size_t used = after.used - before.used;
  EXPECT_LE(ledger, used) << what << ": the ledger counts " << ledger << " bytes, the driver saw "
                          << used << " taken: the ledger counts memory that does not exist";
  EXPECT_LE(used, ledger + kGranule * allocations)
      << what << ": the driver saw " << used << " bytes taken, the ledger counts " << ledger
      << " for " << allocations << " allocation(s): more than one 2 MiB page each is missing "
      << "from the ledger";
}

TEST(CudaLedger, DeviceAllocationsAreWhatTheDriverSeesTaken) {
  TOWERS_NEED_GPU();
  auto rt = Runtime::create({BackendChoice::kCuda, 1});
  Device& device = rt->device(0);
  const Reading before = read(device);
  // Sizes on and off a page boundary, categories of every kind.
  const std::vector<std::size_t> sizes = {4 * kMiB, 64 * kMiB + 1, 3 * kMiB + 4096, kGranule};
  std::vector<Buffer> held;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    held.push_back(device.allocate(sizes[i], static_cast<MemoryCategory>(i % kMemoryCategoryCount)));
  }
  expect_within_bound(before, read(device), sizes.size(), "Device::allocate");
}

// The runtime's own allocations are in the ledger, as kWorkspace: the kernel-stamp ring
// from the device's start, and a stream's cuBLAS workspace from its handle's (which
// prepare_for_capture makes). cublasCreate may allocate inside itself, unknown to the
// ledger: counted as one more allocation in the bound.
TEST(CudaLedger, TheRuntimesWorkspacesAreCountedAndMatchTheDriver) {
  TOWERS_NEED_GPU();
  auto rt = Runtime::create({BackendChoice::kCuda, 1});
  Device& device = rt->device(0);
  const std::size_t ring = device.memory().current(MemoryCategory::kWorkspace);
  EXPECT_GT(ring, 0u) << "the device's kernel-stamp ring is not in the ledger";
  auto stream = device.create_stream();
  const Reading before = read(device);
  prepare_for_capture(*stream);  // makes the stream's cuBLAS handle and workspace
  const Reading after = read(device);
  EXPECT_GE(device.memory().current(MemoryCategory::kWorkspace) - ring, kGranule)
      << "the stream's cuBLAS workspace is not in the ledger";
  expect_within_bound(before, after, 2, "a stream's cuBLAS handle and workspace");
  stream.reset();
  EXPECT_EQ(device.memory().current(MemoryCategory::kWorkspace), ring)
      << "the workspace stayed in the ledger after its stream was destroyed";
}

}  // namespace
}  // namespace towers

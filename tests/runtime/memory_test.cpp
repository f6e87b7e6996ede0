// SPDX-License-Identifier: MIT
// Memory: round trips host <-> device, copies within and across devices, out of memory.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "backends.hpp"
#include "runtime/host/host_device.hpp"

namespace towers {
namespace {

TOWERS_BOTH_BACKENDS_SUITE(Memory);

TEST_P(Memory, RoundTripThroughTwoDevicesPreservesEveryByte) {
  TOWERS_RUNTIME_OR_SKIP(rt, 2);
  constexpr std::size_t kCount = 1 << 20;
  const std::size_t bytes = kCount * sizeof(float);
  Buffer in = rt->device(0).allocate_pinned(bytes);
  Buffer out = rt->device(0).allocate_pinned(bytes);
  std::iota(in.as<float>(), in.as<float>() + kCount, 0.0f);
  Buffer a = rt->device(0).allocate(bytes);
  Buffer b = rt->device(0).allocate(bytes);
  Buffer c = rt->device(1).allocate(bytes);
  auto stream = rt->device(0).create_stream();
  stream->copy(a.data(), in.data(), bytes, "h2d");
  stream->copy(b.data(), a.data(), bytes, "d2d");
  stream->copy(c.data(), b.data(), bytes, "peer");
  stream->fill_zero(a.data(), bytes);
  stream->copy(a.data(), c.data(), bytes, "peer back");
  stream->copy(out.data(), a.data(), bytes, "d2h");
  stream->synchronize();
  for (std::size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(out.as<float>()[i], static_cast<float>(i)) << "at element " << i;
  }
}

TEST_P(Memory, FillZeroClearsExactlyTheRange) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  Buffer host = rt->device(0).allocate_pinned(16 * sizeof(int));
  Buffer dev = rt->device(0).allocate(16 * sizeof(int));
  for (int i = 0; i < 16; ++i) host.as<int>()[i] = i + 1;
  auto stream = rt->device(0).create_stream();
  stream->copy(dev.data(), host.data(), 16 * sizeof(int));
  stream->fill_zero(dev.as<int>() + 4, 8 * sizeof(int));
  stream->copy(host.data(), dev.data(), 16 * sizeof(int));
  stream->synchronize();
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(host.as<int>()[i], (i >= 4 && i < 12) ? 0 : i + 1) << "at " << i;
  }
}

// The message says what was being allocated (bytes and the ledger's category), on which
// device, the room there was, and what to do.
TEST(HostMemory, AllocationBeyondCapacityThrowsOutOfMemoryWithAHint) {
  Trace trace;
  HostDevice device(0, trace, 1 << 20);  // a 1 MiB simulated device
  Buffer fits = device.allocate(512 << 10);
  EXPECT_EQ(device.used_bytes(), std::size_t{512} << 10);
  try {
    Buffer too_big = device.allocate(768 << 10, MemoryCategory::kActivations);
    FAIL() << "allocating past capacity succeeded";
  } catch (const OutOfMemory& e) {
    const std::string message = e.what();
    for (const char* part : {"out of memory on host:0", "allocating 786432 bytes (0.8 MiB) of activations",
                             "0.5 MiB free of the simulated 1.0 MiB", "--batch-size",
                             "fewer towers per device (--towers-per-device, --towers)"}) {
      EXPECT_NE(message.find(part), std::string::npos) << "no \"" << part << "\" in: " << message;
    }
  }
  EXPECT_EQ(device.used_bytes(), std::size_t{512} << 10) << "a failed allocation leaked";
  fits = Buffer();
  EXPECT_EQ(device.used_bytes(), 0u);
}

}  // namespace
}  // namespace towers

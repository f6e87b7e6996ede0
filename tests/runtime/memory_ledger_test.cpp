// SPDX-License-Identifier: MIT
// The memory ledger (chapter 8): every Device::allocate is counted under its category
// until the Buffer is freed; peaks hold after the frees.
#include <gtest/gtest.h>

#include <utility>

#include "backends.hpp"
#include "runtime/memory_ledger.hpp"

namespace towers {
namespace {

TOWERS_BOTH_BACKENDS_SUITE(MemoryLedgerOf);

TEST_P(MemoryLedgerOf, AllocateAndFreeMoveCurrentWhilePeaksHold) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  Device& device = rt->device(0);
  const MemoryLedger& ledger = device.memory();
  // Whatever the program allocated before is the baseline (the runtime's own workspaces,
  // on a GPU, are kWorkspace: memory_ledger_cuda_test.cpp).
  const std::size_t other0 = ledger.current(MemoryCategory::kOther);
  const std::size_t total0 = ledger.current_total();
  {
    Buffer params = device.allocate(1000, MemoryCategory::kParameters);
    Buffer grads = device.allocate(3000, MemoryCategory::kGradients);
    EXPECT_EQ(ledger.current(MemoryCategory::kParameters), 1000u);
    EXPECT_EQ(ledger.current(MemoryCategory::kGradients), 3000u);
    EXPECT_EQ(ledger.current(MemoryCategory::kOptimizerState), 0u);
    EXPECT_EQ(ledger.current_total(), total0 + 4000);
    {
      Buffer more = device.allocate(500, MemoryCategory::kParameters);
      EXPECT_EQ(ledger.current(MemoryCategory::kParameters), 1500u);
    }
    // The free took the 500 bytes off; the peak remembers them.
    EXPECT_EQ(ledger.current(MemoryCategory::kParameters), 1000u);
    EXPECT_EQ(ledger.peak(MemoryCategory::kParameters), 1500u);
    EXPECT_EQ(ledger.peak_total(), total0 + 4500);
  }
  EXPECT_EQ(ledger.current(MemoryCategory::kParameters), 0u);
  EXPECT_EQ(ledger.current(MemoryCategory::kGradients), 0u);
  EXPECT_EQ(ledger.current_total(), total0);
  EXPECT_EQ(ledger.peak(MemoryCategory::kGradients), 3000u);
  // Untagged allocations are "other".
  Buffer plain = device.allocate(64);
  EXPECT_EQ(ledger.current(MemoryCategory::kOther), other0 + 64);
}

TEST_P(MemoryLedgerOf, MovingABufferCountsItOnceAndPinnedMemoryNotAtAll) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  Device& device = rt->device(0);
  const std::size_t total0 = device.memory().current_total();
  Buffer a = device.allocate(256, MemoryCategory::kActivations);
  Buffer b = std::move(a);
  Buffer pinned = device.allocate_pinned(1 << 20);
  EXPECT_EQ(device.memory().current(MemoryCategory::kActivations), 256u);
  EXPECT_EQ(device.memory().current_total(), total0 + 256);
  b = Buffer();
  EXPECT_EQ(device.memory().current(MemoryCategory::kActivations), 0u);
}

TEST_P(MemoryLedgerOf, EachDeviceKeepsItsOwnLedger) {
  TOWERS_RUNTIME_OR_SKIP(rt, 2);
  Buffer on0 = rt->device(0).allocate(128, MemoryCategory::kCommunication);
  EXPECT_EQ(rt->device(0).memory().current(MemoryCategory::kCommunication), 128u);
  EXPECT_EQ(rt->device(1).memory().current(MemoryCategory::kCommunication), 0u);
}

TEST(MemoryLedger, ResetPeaksMeasuresFromNowAndTotalPeakIsOfTheSum) {
  MemoryLedger ledger;
  ledger.add(MemoryCategory::kActivations, 100);
  ledger.remove(MemoryCategory::kActivations, 100);
  ledger.add(MemoryCategory::kGradients, 60);
  // The categories peaked at different times: the total's peak is 100, not 160.
  EXPECT_EQ(ledger.peak(MemoryCategory::kActivations), 100u);
  EXPECT_EQ(ledger.peak_total(), 100u);
  ledger.reset_peaks();
  EXPECT_EQ(ledger.peak(MemoryCategory::kActivations), 0u);
  EXPECT_EQ(ledger.peak(MemoryCategory::kGradients), 60u);
  EXPECT_EQ(ledger.peak_total(), 60u);
}

TEST(MemoryLedger, CategoryNamesAreTheSummaryKeys) {
  EXPECT_EQ(category_name(MemoryCategory::kParameters), "parameters");
  EXPECT_EQ(category_name(MemoryCategory::kGradients), "gradients");
  EXPECT_EQ(category_name(MemoryCategory::kOptimizerState), "optimizer_state");
  EXPECT_EQ(category_name(MemoryCategory::kActivations), "activations");
  EXPECT_EQ(category_name(MemoryCategory::kCommunication), "communication");
  EXPECT_EQ(category_name(MemoryCategory::kWorkspace), "workspace");
  EXPECT_EQ(category_name(MemoryCategory::kOther), "other");
}

}  // namespace
}  // namespace towers

// SPDX-License-Identifier: MIT
// ZeRO-3's whole gradient buffer (src/parallel/zero_gradients): made at the first step and
// kept for the next, not allocated and freed every step (on a GPU each free would wait
// for the whole device); the ledger's peak is that of one buffer per tower all the same.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "model/parameters.hpp"
#include "parallel/zero_gradients.hpp"
#include "runtime/runtime.hpp"

namespace towers {
namespace {

TEST(TransientGradients, TheWholeBufferIsMadeOnceAndKeptForTheNextSteps) {
  auto rt = Runtime::create({BackendChoice::kHost, 2});
  std::vector<std::unique_ptr<Tower>> towers;
  for (int t = 0; t < 2; ++t) {
    auto tower = std::make_unique<Tower>();
    tower->index = t;
    tower->device = &rt->device(t);
    towers.push_back(std::move(tower));
  }
  const std::size_t whole = model::kNumParameters * sizeof(float);
  TransientGradients grads(towers, /*transient=*/true);
  EXPECT_EQ(rt->device(0).memory().current(MemoryCategory::kGradients), 0u) << "made before the first step";
  const std::vector<float*> first = grads.begin_step();
  for (int step = 1; step < 3; ++step) {
    EXPECT_EQ(grads.begin_step(), first) << "step " << step << " got new buffers";
  }
  for (int d = 0; d < 2; ++d) {
    const MemoryLedger& ledger = rt->device(d).memory();
    EXPECT_EQ(ledger.current(MemoryCategory::kGradients), whole) << "device " << d;
    EXPECT_EQ(ledger.peak(MemoryCategory::kGradients), whole) << "device " << d;
  }
}

}  // namespace
}  // namespace towers

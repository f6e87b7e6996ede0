// SPDX-License-Identifier: MIT
// Tests for iterator_plan.hpp: each epoch is a seeded permutation, the towers' shards of it
// are disjoint and cover all but the dropped tail, and impossible shapes are refused with
// a sentence saying what to change.
#include "data/iterator_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "runtime/backend.hpp"

namespace towers::data {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(IteratorPlan, EpochOrderIsASeededPermutation) {
  const auto order = epoch_order(1000, 7, 0);
  std::vector<std::size_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_EQ(epoch_order(1000, 7, 0), order) << "same seed and epoch, same order";
  EXPECT_NE(epoch_order(1000, 8, 0), order) << "another seed reshuffles";
  EXPECT_NE(epoch_order(1000, 7, 1), order) << "every epoch reshuffles";
}

TEST(IteratorPlan, ShardsCoverEachEpochOnceExceptTheDroppedTail) {
  constexpr std::size_t kExamples = 103;  // a prime: no tower count or batch divides it
  for (int towers : {1, 2, 3, 4}) {
    for (int batch : {1, 5, 8}) {
      SCOPED_TRACE(::testing::Message() << towers << " towers, batch " << batch);
      const std::size_t batches = batches_per_epoch(kExamples, towers, batch);
      const auto order = epoch_order(kExamples, 3, 0);
      std::set<std::size_t> seen;
      for (std::size_t b = 0; b < batches; ++b) {
        for (int t = 0; t < towers; ++t) {
          for (std::size_t index : shard_batch(order, towers, t, batch, b)) {
            EXPECT_TRUE(seen.insert(index).second) << "example " << index << " twice";
          }
        }
      }
      EXPECT_EQ(seen.size(), batches * towers * batch);
      EXPECT_LT(kExamples - seen.size(), static_cast<std::size_t>(towers * batch));
    }
  }
}

TEST(IteratorPlan, TowersSplitTheGlobalBatchOfOneTower) {
  // T towers of batch B see step by step what one tower of batch T*B sees.
  const auto order = epoch_order(100, 5, 2);
  const auto global = shard_batch(order, 1, 0, 12, 3);
  for (int t = 0; t < 3; ++t) {
    const auto slice = shard_batch(order, 3, t, 4, 3);
    EXPECT_TRUE(std::equal(slice.begin(), slice.end(), global.begin() + t * 4));
  }
}

TEST(IteratorPlan, ImpossibleShapesSayWhatToChange) {
  EXPECT_NO_THROW(check_sharding(10, 2, 5));
  auto message = [](std::size_t examples, int towers, int batch) {
    try {
      check_sharding(examples, towers, batch);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_PRED2(contains, message(10, 0, 1), "at least one tower");
  EXPECT_PRED2(contains, message(10, 2, 0), "Use a --batch-size of 1 or more");
  EXPECT_PRED2(contains, message(3, 4, 1), "Use at most 3 towers");
  EXPECT_PRED2(contains, message(10, 3, 4), "larger than a tower's shard");
  EXPECT_PRED2(contains, message(10, 3, 4), "--batch-size of at most 3");
}

// A checkpoint records where the input stands as (epoch, position) of the global batch;
// a resume turns it back into a step count. Chapter 1's queue may stand at the very end of
// an epoch (it reshuffles lazily): that is the next epoch's first step.
TEST(IteratorPlan, PositionsAndStepsConvertBothWays) {
  // 50 examples, 2 towers of 4: 6 global batches of 8 per epoch, 2 examples dropped.
  for (std::int64_t steps : {0, 1, 5, 6, 7, 13, 600}) {
    const InputPosition p = position_after(steps, 50, 2, 4, 9);
    EXPECT_EQ(p.epoch, static_cast<std::uint64_t>(steps / 6));
    EXPECT_EQ(p.position, static_cast<std::uint64_t>(steps % 6 * 8));
    EXPECT_EQ(p.global_batch, 8u);
    EXPECT_EQ(steps_before(p, 50, 2, 4, 9), steps);
  }
  EXPECT_EQ(steps_before({9, 50, 8, 1, 48}, 50, 2, 4, 9), 12) << "the end of epoch 1";
  // One tower of 8 (chapter 1) and two of 4 stand at the same places.
  EXPECT_EQ(position_after(7, 50, 1, 8, 9), position_after(7, 50, 2, 4, 9));
}

TEST(IteratorPlan, APositionOfAnotherRunIsRefusedNamingTheFlag) {
  auto message = [](const InputPosition& saved) {
    try {
      steps_before(saved, 50, 2, 4, 9);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_PRED2(contains, message({8, 50, 8, 0, 0}), "made with --seed 8, this run has 9");
  EXPECT_PRED2(contains, message({9, 60, 8, 0, 0}), "Resume with the same --data-dir");
  EXPECT_PRED2(contains, message({9, 50, 4, 0, 0}), "a global batch of 4, this run has 8");
  EXPECT_PRED2(contains, message({9, 50, 8, 0, 3}), "not the start of one of the 6 global batches");
  EXPECT_PRED2(contains, message({9, 50, 8, 0, 56}), "not the start of one of the 6 global batches");
  EXPECT_PRED2(contains, message({9, 50, 8, ~0ull, 0}), "beyond any run");
}

}  // namespace
}  // namespace towers::data

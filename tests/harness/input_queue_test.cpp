// SPDX-License-Identifier: MIT
// harness/input_queue: global batches of a shuffled epoch, a new epoch when one runs out,
// and a restored position that gives exactly the batches an uninterrupted queue gives.
#include "harness/input_queue.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "base/usage_error.hpp"
#include "data/iterator_plan.hpp"
#include "data/synthetic.hpp"

namespace towers {
namespace {

constexpr int kBatch = 4;
constexpr std::size_t kFloats = kBatch * 24 * 24 * 3;

data::Dataset small_set(std::size_t count) {
  return data::generate_synthetic(7, data::Split::kTrain, 0, count);
}

struct Drawn {
  std::vector<float> images = std::vector<float>(kFloats);
  std::vector<std::int32_t> labels = std::vector<std::int32_t>(kBatch);
};

Drawn draw(InputQueue& queue) {
  Drawn d;
  queue.dequeue(d.images.data(), d.labels.data());
  return d;
}

TEST(InputQueue, AnEpochHandsOutEachExampleOnceThenReshuffles) {
  const data::Dataset train = small_set(10);
  InputQueue queue(train, kBatch, 1);
  EXPECT_EQ(queue.position().epoch, 0u);
  draw(queue);
  draw(queue);
  EXPECT_EQ(queue.position().position, 8u);
  draw(queue);  // 2 examples left, fewer than a batch: a new epoch
  EXPECT_EQ(queue.position().epoch, 1u);
  EXPECT_EQ(queue.position().position, 4u);
}

TEST(InputQueue, ARestoredQueueDequeuesWhatTheOriginalWould) {
  const data::Dataset train = small_set(10);
  InputQueue original(train, kBatch, 3);
  for (int i = 0; i < 3; ++i) draw(original);
  const data::InputPosition saved = original.position();
  const Drawn next = draw(original);
  InputQueue resumed(train, kBatch, 3);
  resumed.restore(saved);
  const Drawn again = draw(resumed);
  EXPECT_EQ(again.labels, next.labels);
  EXPECT_EQ(again.images, next.images);
  InputQueue fresh(train, kBatch, 3);
  EXPECT_NE(draw(fresh).images, next.images) << "the test would pass without a restore";
}

TEST(InputQueue, RefusesABatchLargerThanTheSetAndAPositionOfOtherFlags) {
  const data::Dataset train = small_set(10);
  EXPECT_THROW(InputQueue(train, 11, 1), UsageError);
  InputQueue queue(train, kBatch, 1);
  data::InputPosition other_seed = queue.position();
  other_seed.seed = 2;
  EXPECT_THROW(queue.restore(other_seed), UsageError);
  data::InputPosition other_batch = queue.position();
  other_batch.global_batch = 2;
  EXPECT_THROW(queue.restore(other_batch), UsageError);
}

// A damaged or crafted position between two batches was accepted by the queue; and its
// refusals were worded apart from the iterators'. Both now say the same, in one place.
TEST(InputQueue, RefusesPositionsInTheIteratorsWordsCraftedOnesIncluded) {
  const data::Dataset train = small_set(10);  // 2 global batches of 4 per epoch
  InputQueue queue(train, kBatch, 1);
  auto refusal = [](const std::function<void()>& act) {
    try {
      act();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::vector<data::InputPosition> bad(4, queue.position());
  bad[0].seed = 2;
  bad[1].global_batch = 2;
  bad[2].position = 3;   // between two batches
  bad[3].position = 12;  // past the epoch's last batch
  for (const data::InputPosition& saved : bad) {
    const std::string from_queue = refusal([&] { queue.restore(saved); });
    const std::string from_iterators =
        refusal([&] { data::steps_before(saved, train.size(), 2, kBatch / 2, 1); });
    EXPECT_NE(from_queue, "accepted") << "position " << saved.position;
    EXPECT_EQ(from_queue, from_iterators);
  }
  EXPECT_NE(refusal([&] { queue.restore(bad[2]); }).find("not the start of one of the 2 global "
                                                         "batches"), std::string::npos);
}

}  // namespace
}  // namespace towers

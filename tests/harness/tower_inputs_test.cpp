// SPDX-License-Identifier: MIT
// harness/tower_inputs: tower i's iterator delivers, on tower i's device, exactly slice i
// of the global batch the InputQueue of chapters 1-3 hands out (same examples, same
// distortions), so that chapter 4's input changes where batches are made, not what they are.
#include "harness/tower_inputs.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "data/synthetic.hpp"
#include "harness/input_queue.hpp"
#include "runtime/runtime.hpp"

namespace towers {
namespace {

TEST(TowerInputs, TowerIGetsSliceIOfTheQueuesGlobalBatch) {
  constexpr int kTowers = 2, kBatch = 2, kFloats = kBatch * 24 * 24 * 3;
  auto rt = Runtime::create({BackendChoice::kHost, kTowers});
  TowerSet set = make_towers(*rt, TowerLayout{.towers = kTowers, .batch_size = kBatch});
  const data::Dataset train = data::generate_synthetic(7, data::Split::kTrain, 0, 12);
  InputQueue queue(train, kTowers * kBatch, /*seed=*/9);
  TowerInputs inputs(train, set.towers, InputFlags{.prefetch = 2, .input_threads = 2}, 9);
  std::vector<float> global(kTowers * kFloats), mine(kFloats);
  std::vector<std::int32_t> global_labels(kTowers * kBatch), my_labels(kBatch);
  for (int step = 0; step < 4; ++step) {  // 3 steps an epoch: crosses into the second
    queue.dequeue(global.data(), global_labels.data());
    for (int i = 0; i < kTowers; ++i) {
      Stream& stream = *set.towers[i]->stream;
      const data::Batch batch = inputs[i].next();
      stream.wait(*batch.ready);
      stream.copy(mine.data(), batch.images, mine.size() * sizeof(float));
      stream.copy(my_labels.data(), batch.labels, my_labels.size() * sizeof(std::int32_t));
      inputs[i].release(batch, stream);
      stream.synchronize();
      EXPECT_EQ(my_labels, std::vector<std::int32_t>(global_labels.begin() + i * kBatch,
                                                     global_labels.begin() + (i + 1) * kBatch))
          << "step " << step << ", tower " << i;
      EXPECT_TRUE(std::equal(mine.begin(), mine.end(), global.begin() + i * kFloats))
          << "step " << step << ", tower " << i << ": other images or distortions";
    }
  }
  EXPECT_GE(inputs.input_wait_ms(), 0.0);
}

}  // namespace
}  // namespace towers

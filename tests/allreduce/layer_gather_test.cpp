// SPDX-License-Identifier: MIT
// ZeRO-3's layer gathers (src/parallel/layer_gather): every layer acquire() hands out is
// the layer's parameters, whole, put together from every tower's shard, and it starts on
// a 256-byte boundary, as a buffer of its own would (cudaMalloc's alignment) — at both ends
// of the window, whatever the layer's length. On simulated devices; the addresses are the
// real ones, so the alignment checked here is the one a GPU's kernels would see.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/gradient_layers.hpp"
#include "model/parameters.hpp"
#include "parallel/allreduce.hpp"
#include "parallel/layer_gather.hpp"
#include "runtime/runtime.hpp"

namespace towers {
namespace {

using model::gradient_layers;
using model::kNumParameters;

// Parameter e's value: its index, exact in a float for every e < 2^24.
float value_of(std::size_t e) { return static_cast<float>(e); }

TEST(LayerGather, EveryAcquiredLayerIsWholeAndStartsOn256Bytes) {
  constexpr int kTowers = 2;
  auto rt = Runtime::create({BackendChoice::kHost, kTowers});
  std::vector<std::unique_ptr<Tower>> towers;
  std::vector<Buffer> shard_buffers;
  std::vector<const float*> shards;
  std::vector<Chunk> owned;
  for (int t = 0; t < kTowers; ++t) {
    auto tower = std::make_unique<Tower>();
    tower->index = t;
    tower->device = &rt->device(t);
    tower->stream = tower->device->create_stream();
    owned.push_back(ring_chunk(kNumParameters, kTowers, t));
    std::vector<float> values(owned[t].size);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = value_of(owned[t].offset + i);
    shard_buffers.push_back(tower->device->allocate(values.size() * sizeof(float)));
    tower->stream->copy(shard_buffers[t].data(), values.data(), values.size() * sizeof(float));
    tower->stream->synchronize();
    shards.push_back(shard_buffers[t].as<float>());
    towers.push_back(std::move(tower));
  }
  for (const bool prefetch : {true, false}) {
    LayerGather gather(towers, shards, owned, nullptr, prefetch);
    for (int t = 0; t < kTowers; ++t) {
      const model::Network::LayerParams hooks = gather.hooks(t);
      Stream& stream = *towers[t]->stream;
      for (const int layer : LayerGather::schedule()) {
        const model::GradientLayer& range = gradient_layers()[static_cast<std::size_t>(layer)];
        const float* params = hooks.acquire(layer);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(params) % LayerGather::kWindowAlignment, 0u)
            << range.name << " of tower " << t << " (prefetch " << prefetch << ") starts "
            << reinterpret_cast<std::uintptr_t>(params) % LayerGather::kWindowAlignment
            << " bytes past a 256-byte boundary";
        std::vector<float> got(range.count);
        stream.copy(got.data(), params, range.count * sizeof(float), "read layer");
        stream.synchronize();
        for (std::size_t i = 0; i < range.count; ++i) {
          ASSERT_EQ(got[i], value_of(range.offset + i))
              << range.name << " of tower " << t << ", element " << i;
        }
        hooks.release(layer);
      }
    }
  }
}

// The window holds any two consecutive layers of the schedule, each rounded up to the
// alignment, and is itself a whole number of aligned blocks.
TEST(LayerGather, TheWindowHoldsTwoConsecutiveLayersRoundedUp) {
  constexpr std::size_t block = LayerGather::kWindowAlignment / sizeof(float);
  const std::vector<int>& uses = LayerGather::schedule();
  const auto rounded = [&](int layer) {
    const std::size_t count = gradient_layers()[static_cast<std::size_t>(layer)].count;
    return (count + block - 1) / block * block;
  };
  EXPECT_EQ(LayerGather::window_elements() % block, 0u);
  for (std::size_t u = 0; u + 1 < uses.size(); ++u) {
    EXPECT_LE(rounded(uses[u]) + rounded(uses[u + 1]), LayerGather::window_elements());
  }
}

}  // namespace
}  // namespace towers

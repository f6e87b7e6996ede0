// SPDX-License-Identifier: MIT
// parallel/shard_reader: sharded state comes back to the host whole, each tower's range in
// its place (chapter 8's checkpoints and --eval); unsharded state is read from tower 0
// alone; ranges with a hole or an overlap are refused, never saved. The optimizer's state
// (Adam's two moments) comes back whole too, one moment after the other.
#include "parallel/shard_reader.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "runtime/runtime.hpp"

namespace towers {
namespace {

// Three towers on three host devices, each holding `held[i]` of 10 values 0.5, 1.5, ...
struct Towers {
  static constexpr std::size_t kCount = 10;
  std::unique_ptr<Runtime> runtime = Runtime::create({BackendChoice::kHost, 3});
  std::vector<std::unique_ptr<Stream>> owned_streams;
  std::vector<Buffer> buffers;
  std::vector<float*> shards;
  std::vector<Stream*> streams;

  explicit Towers(const std::vector<Chunk>& held) {
    for (std::size_t i = 0; i < held.size(); ++i) {
      Device& device = runtime->device(static_cast<int>(i));
      owned_streams.push_back(device.create_stream());
      streams.push_back(owned_streams.back().get());
      buffers.push_back(device.allocate(std::max<std::size_t>(held[i].size, 1) * sizeof(float)));
      shards.push_back(buffers.back().as<float>());
      std::vector<float> values(held[i].size);
      for (std::size_t j = 0; j < values.size(); ++j) values[j] = 0.5f + float(held[i].offset + j);
      streams.back()->copy(shards.back(), values.data(), values.size() * sizeof(float));
      streams.back()->synchronize();
    }
  }
};

std::vector<float> expected_whole() {
  std::vector<float> v(Towers::kCount);
  for (std::size_t j = 0; j < v.size(); ++j) v[j] = 0.5f + float(j);
  return v;
}

TEST(ReadShards, PutsEachTowersRangeInItsPlaceWhateverTheOrder) {
  // The ring's layout over 3 towers: tower r owns chunk r+1; 10 = 4 + 3 + 3.
  const std::vector<Chunk> held = {{4, 3}, {7, 3}, {0, 4}};
  Towers towers(held);
  std::vector<float> host(Towers::kCount, -1.0f);
  read_shards(host.data(), Towers::kCount, towers.shards, held, towers.streams);
  EXPECT_EQ(host, expected_whole());
}

TEST(ReadShards, ReadsUnshardedStateFromTowerZeroAlone) {
  const std::vector<Chunk> held = {{0, 10}, {0, 10}, {0, 10}};
  Towers towers(held);
  // Tower 1 and 2's copies differ: only tower 0's may be read.
  const float other = 99.0f;
  towers.streams[1]->copy(towers.shards[1], &other, sizeof other);
  towers.streams[1]->synchronize();
  std::vector<float> host(Towers::kCount, -1.0f);
  read_shards(host.data(), Towers::kCount, towers.shards, held, towers.streams);
  EXPECT_EQ(host, expected_whole());
}

TEST(ReadShards, RefusesRangesWithAHoleOrAnOverlap) {
  for (const std::vector<Chunk>& held : {std::vector<Chunk>{{0, 4}, {5, 3}, {8, 2}},    // 4 unowned
                                         std::vector<Chunk>{{0, 4}, {3, 4}, {7, 3}},    // 3 twice
                                         std::vector<Chunk>{{0, 4}, {4, 3}, {7, 2}}}) {  // 9 unowned
    Towers towers(held);
    std::vector<float> host(Towers::kCount);
    EXPECT_THROW(read_shards(host.data(), Towers::kCount, towers.shards, held, towers.streams),
                 std::invalid_argument);
  }
}

TEST(ReadShards, RefusesListsOfDifferentLengths) {
  const std::vector<Chunk> held = {{0, 5}, {5, 5}};
  Towers towers(held);
  std::vector<float> host(Towers::kCount);
  const std::vector<Stream*> one_stream = {towers.streams[0]};
  EXPECT_THROW(read_shards(host.data(), Towers::kCount, towers.shards, held, one_stream),
               std::invalid_argument);
}

// Adam's moments over three towers of unequal shards: read back as two whole arrays, all
// the first moments, then all the second, each value in its parameter's place.
TEST(ReadOptimizerShards, PutsEachMomentWholeOneAfterTheOther) {
  const std::vector<Chunk> held = {{4, 3}, {7, 3}, {0, 4}};
  Towers towers(held);  // for its runtime and streams
  std::vector<model::OptimizerState> states;
  for (std::size_t i = 0; i < held.size(); ++i) {
    Device& device = towers.runtime->device(static_cast<int>(i));
    states.emplace_back(model::Optimizer::kAdam, device, *towers.streams[i], held[i].size);
    // m = 0.5 + index, v = 100.5 + index: the same values every layout must put back.
    std::vector<float> mv(2 * held[i].size);
    for (std::size_t j = 0; j < held[i].size; ++j) {
      mv[j] = 0.5f + float(held[i].offset + j);
      mv[held[i].size + j] = 100.5f + float(held[i].offset + j);
    }
    towers.streams[i]->copy(states.back().part(0), mv.data(), mv.size() * sizeof(float));
    towers.streams[i]->synchronize();
  }
  std::vector<float> host(2 * Towers::kCount, -1.0f);
  read_optimizer_shards(host.data(), Towers::kCount, states, held, towers.streams);
  std::vector<float> expected = expected_whole();
  for (float m : expected_whole()) expected.push_back(m + 100.0f);
  EXPECT_EQ(host, expected);

  // And restore() hands each tower its range of both back (what --resume does).
  std::vector<float> again(2 * Towers::kCount, -1.0f);
  for (std::size_t i = 0; i < held.size(); ++i) {
    towers.streams[i]->fill_zero(states[i].part(0), 2 * held[i].size * sizeof(float));
    states[i].restore(*towers.streams[i], host.data(), Towers::kCount, held[i].offset);
  }
  read_optimizer_shards(again.data(), Towers::kCount, states, held, towers.streams);
  EXPECT_EQ(again, expected);
}

}  // namespace
}  // namespace towers

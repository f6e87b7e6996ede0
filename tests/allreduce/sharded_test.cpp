// SPDX-License-Identifier: MIT
// Chapter 8's reduce-scatter and all-gather on the ring (simulated devices): each half
// alone does what it promises, the shards tile the buffer, and the all-reduce is exactly
// their composition, bit for bit, on inputs where the order of the adds matters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <set>
#include <string>
#include <vector>

#include "parallel/allreduce.hpp"
#include "tower_buffers.hpp"

namespace towers {
namespace {

using testing::expected_mean;
using testing::host_runtime;
using testing::input_value;
using testing::round_robin;
using testing::TowerBuffers;

// n towers (the parameter), tower t on simulated device t, and the ring's two halves for
// them, for counts up to 100.
class Sharded : public ::testing::TestWithParam<int> {
 protected:
  const int n = GetParam();
  const std::unique_ptr<Runtime> rt = host_runtime(n);
  const std::unique_ptr<ShardedCollectives> collectives =
      make_ring_collectives(*rt, round_robin(n, n), 100);

  // The towers' buffers of `count` floats, holding round 0's inputs (input_value).
  TowerBuffers uploaded(std::size_t count) const {
    TowerBuffers towers(*rt, round_robin(n, n), count);
    towers.upload();
    return towers;
  }
};
INSTANTIATE_TEST_SUITE_P(Towers1To8, Sharded, ::testing::Range(1, 9));

// Counts that divide n ways and counts that do not (and fewer elements than towers).
std::set<std::size_t> counts_for(int n) {
  return {1, static_cast<std::size_t>(n - 1) + 1, static_cast<std::size_t>(4 * n),
          static_cast<std::size_t>(3 * n + 2)};
}

// Arbitrary floats: their sums round, so a different order of adds shows in the bits.
void upload_random(TowerBuffers& towers, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (int t = 0; t < towers.towers(); ++t) {
    std::vector<float> host(towers.count());
    for (float& v : host) v = value(rng);
    towers.stream(t).copy(towers.buffers()[t], host.data(), host.size() * sizeof(float));
    towers.stream(t).synchronize();
  }
}

TEST_P(Sharded, ShardsTileTheBufferOncePerTowerAndDifferByAtMostOne) {
  for (std::size_t count : {0, 1, 7, 64, 99}) {
    std::vector<int> owners(count, 0);
    std::size_t smallest = count, largest = 0;
    for (int t = 0; t < n; ++t) {
      const Chunk c = collectives->shard(count, t);
      ASSERT_LE(c.offset + c.size, count);
      for (std::size_t e = c.offset; e < c.offset + c.size; ++e) ++owners[e];
      smallest = std::min(smallest, c.size);
      largest = std::max(largest, c.size);
    }
    for (std::size_t e = 0; e < count; ++e) ASSERT_EQ(owners[e], 1) << "element " << e;
    EXPECT_LE(largest - smallest, 1u) << "count " << count;
  }
}

TEST_P(Sharded, ReduceScatterLeavesEachTowerTheExactMeanOfItsShard) {
  for (std::size_t count : counts_for(n)) {
    TowerBuffers towers = uploaded(count);
    collectives->reduce_scatter(towers.buffers(), count, towers.streams());
    const auto got = towers.download();
    const auto mean = expected_mean(n, count);
    for (int t = 0; t < n; ++t) {
      const Chunk c = collectives->shard(count, t);
      for (std::size_t e = c.offset; e < c.offset + c.size; ++e) {
        ASSERT_EQ(got[t][e], mean[e]) << "n=" << n << " count=" << count << " tower " << t
                                      << " element " << e;
      }
    }
  }
}

TEST_P(Sharded, AllGatherGivesEveryTowerEveryShardUnchanged) {
  for (std::size_t count : counts_for(n)) {
    // Tower t holds input_value(t, e): whose copy arrived shows.
    TowerBuffers towers = uploaded(count);
    collectives->all_gather(towers.buffers(), count, towers.streams());
    const auto got = towers.download();
    for (int owner = 0; owner < n; ++owner) {
      const Chunk c = collectives->shard(count, owner);
      for (std::size_t e = c.offset; e < c.offset + c.size; ++e) {
        for (int t = 0; t < n; ++t) {
          ASSERT_EQ(got[t][e], input_value(owner, e))
              << "n=" << n << " count=" << count << " tower " << t << " element " << e
              << " should hold tower " << owner << "'s value";
        }
      }
    }
  }
}

TEST_P(Sharded, AllReduceEqualsReduceScatterThenAllGatherInEveryBit) {
  const std::size_t count = 3 * n + 2;
  auto whole = make_ring_allreduce(*rt, round_robin(n, n), count);
  auto halves = make_ring_collectives(*rt, round_robin(n, n), count);
  TowerBuffers a(*rt, round_robin(n, n), count), b(*rt, round_robin(n, n), count);
  upload_random(a, 7);
  upload_random(b, 7);
  whole->average(a.buffers(), count, a.streams());
  halves->reduce_scatter(b.buffers(), count, b.streams());
  halves->all_gather(b.buffers(), count, b.streams());
  const auto got_a = a.download(), got_b = b.download();
  for (int t = 0; t < n; ++t) {
    EXPECT_EQ(std::memcmp(got_a[t].data(), got_b[t].data(), count * sizeof(float)), 0)
        << "tower " << t;
  }
}

// The ring's arithmetic, written out on the host: chunk c travels from tower c around
// the ring, each tower adding its own value to what arrives, and the tower holding the
// last add (c-1) multiplies by 1/n. The all-reduce must give exactly these bits before
// and after it was split into its halves.
TEST_P(Sharded, RingAllReduceKeepsItsOrderOfAdds) {
  const std::size_t count = 5 * n + 3;
  auto ring = make_ring_allreduce(*rt, round_robin(n, n), count);
  TowerBuffers towers(*rt, round_robin(n, n), count);
  upload_random(towers, 11);
  const auto inputs = towers.download();
  ring->average(towers.buffers(), count, towers.streams());
  const auto got = towers.download();
  for (int c = 0; c < n; ++c) {
    const Chunk chunk = ring_chunk(count, n, c);
    for (std::size_t e = chunk.offset; e < chunk.offset + chunk.size; ++e) {
      float sum = inputs[c][e];
      for (int s = 1; s < n; ++s) sum = inputs[(c + s) % n][e] + sum;
      const float mean = n == 1 ? sum : sum * (1.0f / static_cast<float>(n));
      for (int t = 0; t < n; ++t) {
        ASSERT_EQ(got[t][e], mean) << "n=" << n << " tower " << t << " element " << e;
      }
    }
  }
}

// ZeRO-2's buckets: the buffer reduce-scattered one bucket at a time, each bucket in a
// buffer of its own, must leave every tower's shard with the bits one reduce_scatter() of
// the whole buffer leaves (the ring adds each element in its chunk's order either way), and
// move the same bytes over the links. Buckets of uneven sizes, some inside one chunk, some
// across several, one empty.
TEST_P(Sharded, ReduceScatterBucketByBucketGivesTheWholeBuffersBits) {
  const std::size_t count = 7 * n + 3;
  const std::vector<Chunk> buckets = {{0, 2}, {2, 0}, {2, 3 * static_cast<std::size_t>(n)},
                                      {3 * static_cast<std::size_t>(n) + 2, 1},
                                      {3 * static_cast<std::size_t>(n) + 3, 4 * static_cast<std::size_t>(n)}};
  WireBytes whole_wire, bucket_wire;
  auto whole = make_ring_collectives(*rt, round_robin(n, n), count, &whole_wire);
  auto by_bucket = make_ring_collectives(*rt, round_robin(n, n), count, &bucket_wire);
  TowerBuffers a(*rt, round_robin(n, n), count);
  upload_random(a, 13);
  const auto inputs = a.download();
  whole->reduce_scatter(a.buffers(), count, a.streams());
  const auto expected = a.download();

  std::vector<std::vector<float>> got(n, std::vector<float>(count));
  for (const Chunk& bucket : buckets) {
    TowerBuffers b(*rt, round_robin(n, n), std::max<std::size_t>(bucket.size, 1));
    for (int t = 0; t < n; ++t) {
      b.stream(t).copy(b.buffers()[t], inputs[t].data() + bucket.offset, bucket.size * sizeof(float));
    }
    by_bucket->reduce_scatter_bucket(b.buffers(), count, bucket, b.streams());
    const auto out = b.download();
    for (int t = 0; t < n; ++t) {
      std::copy_n(out[t].begin(), bucket.size, got[t].begin() + static_cast<std::ptrdiff_t>(bucket.offset));
    }
  }
  for (int t = 0; t < n; ++t) {
    const Chunk mine = by_bucket->shard(count, t);
    ASSERT_EQ(mine.offset, whole->shard(count, t).offset);
    EXPECT_EQ(std::memcmp(got[t].data() + mine.offset, expected[t].data() + mine.offset,
                          mine.size * sizeof(float)), 0)
        << "n=" << n << " tower " << t;
  }
  EXPECT_EQ(bucket_wire.total(), whole_wire.total()) << "n=" << n;
  EXPECT_EQ(whole_wire.total(), (n - 1) * count * sizeof(float)) << "n=" << n;
}

TEST(Sharded, ABucketOutsideTheBufferIsRefused) {
  auto rt = host_runtime(2);
  auto ring = make_ring_collectives(*rt, round_robin(2, 2), 10);
  TowerBuffers towers(*rt, round_robin(2, 2), 4);
  EXPECT_THROW(ring->reduce_scatter_bucket(towers.buffers(), 10, Chunk{8, 4}, towers.streams()),
               std::invalid_argument);
  EXPECT_THROW(ring->reduce_scatter_bucket(towers.buffers(), 10, Chunk{11, 0}, towers.streams()),
               std::invalid_argument);
}

TEST(Sharded, ShardOwnedByTowerIsTheChunkItsLastReduceStepCompletes) {
  // Tower r owns ring chunk r+1: documented, and what chapter 8's update relies on.
  auto rt = host_runtime(3);
  auto ring = make_ring_collectives(*rt, round_robin(3, 3), 9);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(ring->shard(9, r).offset, ring_chunk(9, 3, (r + 1) % 3).offset) << "tower " << r;
  }
  EXPECT_EQ(ring->name(), "ring");
}

}  // namespace
}  // namespace towers

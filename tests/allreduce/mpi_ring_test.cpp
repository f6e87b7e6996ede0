// SPDX-License-Identifier: MIT
// Chapter 5's ring over MPI_Sendrecv (ring_average_sendrecv), run by ctest under mpiexec
// on 2 and 3 ranks: every rank ends with the exact mean for counts that leave chunks
// empty or uneven, and with the same bits as chapter 4's in-process ring, which every rank
// also runs on the job's inputs (all ranks' buffers, on simulated devices) to compare;
// its two halves by bucket (chapter 11's ZeRO ranks) as chapter 8's in-process halves.
//
// Every rank runs every test; mpi_test_main.cpp's main() fails the job when any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "parallel/allreduce.hpp"
#include "parallel/allreduce_mpi.hpp"
#include "../mpi_test_main.hpp"
#include "tower_buffers.hpp"

namespace towers {
namespace {

using testing::world_rank;
using testing::world_size;

// Averages `data` over the ranks with the ring over MPI_Sendrecv.
void sendrecv_average(std::vector<float>& data) {
  const std::size_t chunk = ring_chunk(data.size(), world_size(), 0).size;
  std::vector<float> receive(std::max<std::size_t>(chunk, 1));
  ring_average_sendrecv(data.data(), data.size(), receive.data(), MPI_COMM_WORLD);
}

TEST(RingOverSendrecv, EveryRankHoldsTheExactMean) {
  const int n = world_size();
  ASSERT_GE(n, 2) << "run under mpiexec -n 2 or more: one rank has nothing to exchange";
  // 0 and 1: the edge cases; n - 1: empty chunks; 3n + 2 and 1001: chunks of unequal size.
  for (std::size_t count : std::set<std::size_t>{0, 1, static_cast<std::size_t>(n - 1),
                                                 static_cast<std::size_t>(3 * n + 2), 1001}) {
    std::vector<float> data(count);
    for (std::size_t e = 0; e < count; ++e) data[e] = testing::input_value(world_rank(), e);
    sendrecv_average(data);
    const std::vector<float> expected = testing::expected_mean(n, count);
    for (std::size_t e = 0; e < count; ++e) {
      ASSERT_EQ(data[e], expected[e])
          << "rank " << world_rank() << ", count " << count << ", element " << e;
    }
  }
}

// Inputs whose sums round: the order of the additions decides the bits.
std::vector<float> rank_input(int r, std::size_t count) {
  std::mt19937 rng(1234u + static_cast<unsigned>(r));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> data(count);
  for (float& x : data) x = value(rng) * 1e-3f + value(rng);
  return data;
}

TEST(RingOverSendrecv, MatchesChapter4sRingBitForBit) {
  const int n = world_size();
  const std::size_t count = 10007;  // not a multiple of 2 or 3
  std::vector<float> mine = rank_input(world_rank(), count);
  sendrecv_average(mine);

  // Chapter 4's ring on n simulated devices, fed every rank's input.
  auto runtime = Runtime::create({BackendChoice::kHost, n});
  auto ring = make_ring_allreduce(*runtime, testing::round_robin(n, n), count);
  testing::TowerBuffers towers(*runtime, testing::round_robin(n, n), count);
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < n; ++r) {
    inputs.push_back(rank_input(r, count));
    towers.stream(r).copy(towers.buffers()[r], inputs.back().data(), count * sizeof(float), "in");
  }
  ring->average(towers.buffers(), count, towers.streams());
  const std::vector<float> in_process = towers.download()[world_rank()];

  std::size_t differing = 0;
  for (std::size_t e = 0; e < count; ++e) differing += mine[e] != in_process[e];
  EXPECT_EQ(differing, 0u) << "rank " << world_rank() << ": same chunks, same order of sums";
  // With three ranks or more the sums do round: another order changes bits, so the
  // equality above means something. (Two ranks add a + b or b + a: the same bits.)
  if (n < 3) return;
  std::vector<float> other_order(count);
  for (std::size_t e = 0; e < count; ++e) {
    float sum = inputs[n - 1][e];
    for (int r = n - 2; r >= 0; --r) sum += inputs[r][e];
    other_order[e] = sum * (1.0f / static_cast<float>(n));
  }
  EXPECT_NE(other_order, in_process) << "inputs too tame to tell orders of sums apart";
}

// Chapter 11's tensor ranks: the ring's sum (Reduction::kSum, no scale), the same bits as
// chapter 10's in-process ring that sums, and the bytes each rank says it sent adding up
// to the ring's 2(n-1) x count floats over the job.
TEST(RingOverSendrecv, SumsAsChapter10sRingAndCountsItsBytes) {
  const int n = world_size();
  const std::size_t count = 10007;
  std::vector<float> mine = rank_input(world_rank(), count);
  std::vector<float> receive(ring_chunk(count, n, 0).size);
  const std::uint64_t sent =
      ring_average_sendrecv(mine.data(), count, receive.data(), MPI_COMM_WORLD, Reduction::kSum);

  auto runtime = Runtime::create({BackendChoice::kHost, n});
  auto ring = make_ring_allreduce(*runtime, testing::round_robin(n, n), count, nullptr,
                                  Reduction::kSum);
  testing::TowerBuffers towers(*runtime, testing::round_robin(n, n), count);
  std::vector<std::vector<float>> inputs;  // kept: the copies read them when they run
  for (int r = 0; r < n; ++r) {
    inputs.push_back(rank_input(r, count));
    towers.stream(r).copy(towers.buffers()[r], inputs.back().data(), count * sizeof(float), "in");
  }
  ring->average(towers.buffers(), count, towers.streams());
  EXPECT_EQ(mine, towers.download()[world_rank()]) << "rank " << world_rank();

  unsigned long long job_sent = 0, mine_sent = sent;
  MPI_Allreduce(&mine_sent, &job_sent, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(job_sent, 2ull * (n - 1) * count * sizeof(float));
}

// Chapter 11's ZeRO ranks: the ring's halves called apart, reduce-scatter bucket by bucket
// (ZeRO-2) and all-gather one bucket at a time (ZeRO-3's layers), leave each rank chapter
// 8's in-process halves' bits: its shard (chunk rank + 1) of the mean after the
// reduce-scatter, every element after the gathers; and the bytes over the job are the
// all-reduce's, 2(n-1) x count floats, however the buffer is cut into buckets.
TEST(RingOverSendrecv, HalvesByBucketAreChapter8sHalvesBitForBit) {
  const int n = world_size(), r = world_rank();
  const std::size_t count = 10007;
  // Buckets of uneven sizes that cut through the chunks (the last one of one element).
  const std::vector<Chunk> buckets = {{0, 1234}, {1234, 5000}, {6234, 3772}, {10006, 1}};
  std::vector<float> mine = rank_input(r, count);
  std::vector<float> receive(ring_chunk(count, n, 0).size);
  std::uint64_t sent = 0;
  for (const Chunk& b : buckets) {  // each bucket's elements from its own buffer's start
    std::vector<float> bucket(mine.begin() + b.offset, mine.begin() + b.offset + b.size);
    sent += ring_reduce_scatter_sendrecv(bucket.data(), count, receive.data(), MPI_COMM_WORLD,
                                         Reduction::kMean, b);
    std::copy(bucket.begin(), bucket.end(), mine.begin() + b.offset);
  }
  const Chunk shard = ring_chunk(count, n, (r + 1) % n);

  // Chapter 8's halves on n simulated devices, fed every rank's input.
  auto runtime = Runtime::create({BackendChoice::kHost, n});
  auto halves = make_ring_collectives(*runtime, testing::round_robin(n, n), count);
  testing::TowerBuffers towers(*runtime, testing::round_robin(n, n), count);
  std::vector<std::vector<float>> inputs;
  for (int t = 0; t < n; ++t) {
    inputs.push_back(rank_input(t, count));
    towers.stream(t).copy(towers.buffers()[t], inputs.back().data(), count * sizeof(float), "in");
  }
  halves->reduce_scatter(towers.buffers(), count, towers.streams());
  const std::vector<float> in_process = towers.download()[static_cast<std::size_t>(r)];
  const Chunk tower_shard = halves->shard(count, r);
  ASSERT_EQ(shard.offset, tower_shard.offset);
  ASSERT_EQ(shard.size, tower_shard.size);
  for (std::size_t e = shard.offset; e < shard.offset + shard.size; ++e) {
    ASSERT_EQ(mine[e], in_process[e]) << "rank " << r << ", element " << e;
  }

  // The gathers: only this rank's shard is in place; each bucket brings the others'.
  std::vector<float> gathered(count, -1.0f);
  std::copy_n(mine.begin() + shard.offset, shard.size, gathered.begin() + shard.offset);
  for (const Chunk& b : buckets) {
    sent += ring_all_gather_sendrecv(gathered.data() + b.offset, count, MPI_COMM_WORLD, b);
  }
  halves->all_gather(towers.buffers(), count, towers.streams());
  EXPECT_EQ(gathered, towers.download()[static_cast<std::size_t>(r)]) << "rank " << r;

  unsigned long long job_sent = 0, mine_sent = sent;
  MPI_Allreduce(&mine_sent, &job_sent, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(job_sent, 2ull * (n - 1) * count * sizeof(float));
}

}  // namespace
}  // namespace towers

// SPDX-License-Identifier: MIT
// The ring all-reduce on simulated devices: exact means for 1..8 towers and any count,
// towers sharing a device, reuse, the trace of its steps, and its ordering contract.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "parallel/allreduce.hpp"
#include "runtime/busy.hpp"
#include "trace/trace.hpp"
#include "tower_buffers.hpp"

namespace towers {
namespace {

using testing::average_once;
using testing::expected_mean;
using testing::first_mismatch;
using testing::host_runtime;
using testing::round_robin;
using testing::TowerBuffers;

TEST(RingChunk, ChunksTileTheBufferAndDifferByAtMostOne) {
  for (int n = 1; n <= 8; ++n) {
    for (std::size_t count : {0, 1, 2, 7, 8, 9, 100, 1001}) {
      std::size_t next = 0, smallest = count, largest = 0;
      for (int i = 0; i < n; ++i) {
        const Chunk c = ring_chunk(count, n, i);
        EXPECT_EQ(c.offset, next) << "n=" << n << " count=" << count << " chunk " << i;
        next += c.size;
        smallest = std::min(smallest, c.size);
        largest = std::max(largest, c.size);
      }
      EXPECT_EQ(next, count) << "n=" << n;
      EXPECT_LE(largest - smallest, 1u) << "n=" << n << " count=" << count;
    }
  }
}

class RingTowers : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Towers1To8, RingTowers, ::testing::Range(1, 9));

TEST_P(RingTowers, EqualsTheExactMeanForCountsThatDoNotDivide) {
  const int n = GetParam();
  auto rt = host_runtime(n);
  const std::size_t max_count = 3 * n + 2;
  auto ring = make_ring_allreduce(*rt, round_robin(n, n), max_count);
  // count < n leaves chunks empty; 0 and 1 are the edge cases; 3n+2 does not divide.
  for (std::size_t count : std::set<std::size_t>{0, 1, static_cast<std::size_t>(n - 1),
                                                 static_cast<std::size_t>(n + 1), max_count}) {
    TowerBuffers towers(*rt, round_robin(n, n), count);
    EXPECT_EQ(average_once(*ring, towers), "");
  }
}

TEST(Ring, PowerOfTwoTowersGiveTheMeanItself) {
  // With n a power of two, 1/n is exact, so the one rounding left disappears.
  for (int n : {1, 2, 4, 8}) {
    auto rt = host_runtime(n);
    const std::size_t count = 5 * n + 3;
    auto ring = make_ring_allreduce(*rt, round_robin(n, n), count);
    TowerBuffers towers(*rt, round_robin(n, n), count);
    towers.upload();
    ring->average(towers.buffers(), count, towers.streams());
    const auto got = towers.download();
    for (std::size_t e = 0; e < count; ++e) {
      double sum = 0;
      for (int t = 0; t < n; ++t) sum += testing::input_value(t, e);
      for (int t = 0; t < n; ++t) {
        ASSERT_EQ(got[t][e], static_cast<float>(sum / n)) << "n=" << n << " tower " << t;
      }
    }
  }
}

TEST_P(RingTowers, AveragingTwiceWithoutWaitingIsStillExact) {
  const int n = GetParam();
  auto rt = host_runtime(n);
  const std::size_t count = 4 * n + 1;
  auto ring = make_ring_allreduce(*rt, round_robin(n, n), count);
  TowerBuffers towers(*rt, round_robin(n, n), count);
  towers.upload(0);
  ring->average(towers.buffers(), count, towers.streams());
  ring->average(towers.buffers(), count, towers.streams());  // the mean of equal buffers
  // Every tower holds the same m after the first average, so the ring's sum is m added
  // to a running sum n-1 times, in that order whichever chunk: the oracle does the same.
  const std::vector<float> once = expected_mean(n, count, 0);
  std::vector<float> twice(count);
  for (std::size_t e = 0; e < count; ++e) {
    float sum = once[e];
    for (int t = 1; t < n; ++t) sum += once[e];
    twice[e] = sum * (1.0f / static_cast<float>(n));
  }
  EXPECT_EQ(first_mismatch(towers.download(), twice), "");
  // And a new round of inputs through the same receive buffers and events.
  towers.upload(1);
  ring->average(towers.buffers(), count, towers.streams());
  EXPECT_EQ(first_mismatch(towers.download(), expected_mean(n, count, 1)), "");
}

TEST_P(RingTowers, TraceShowsEveryStepOnEveryTowersStream) {
  const int n = GetParam();
  auto rt = host_runtime(n);
  const std::size_t count = 2 * n + 1;
  auto ring = make_ring_allreduce(*rt, round_robin(n, n), count);
  TowerBuffers towers(*rt, round_robin(n, n), count);
  towers.upload();
  rt->trace().set_enabled(true);
  ring->average(towers.buffers(), count, towers.streams());
  towers.synchronize();
  std::map<int, std::multiset<std::string>> steps_of_tower;
  for (const TraceEvent& e : rt->trace().collect()) {
    const bool step = e.name.rfind("ring rs ", 0) == 0 || e.name.rfind("ring ag ", 0) == 0;
    if (step && e.name.find(" add") == std::string::npos) steps_of_tower[e.tower].insert(e.name);
  }
  if (n == 1) {
    EXPECT_TRUE(steps_of_tower.empty()) << "one tower has nothing to exchange";
    return;
  }
  ASSERT_EQ(steps_of_tower.size(), static_cast<std::size_t>(n));
  for (int t = 0; t < n; ++t) {
    const auto& names = steps_of_tower[t];
    EXPECT_EQ(names.size(), static_cast<std::size_t>(2 * (n - 1))) << "tower " << t;
    for (int s = 1; s < n; ++s) {
      const std::string of = std::to_string(s) + "/" + std::to_string(n - 1);
      EXPECT_EQ(names.count("ring rs " + of), 1u) << "tower " << t << " step rs " << of;
      EXPECT_EQ(names.count("ring ag " + of), 1u) << "tower " << t << " step ag " << of;
    }
  }
}

TEST(Ring, TowersSharingOneDeviceAverageToo) {
  auto rt = host_runtime(2);
  for (const auto& placement : {std::vector<int>{0, 0, 0, 0}, round_robin(6, 2)}) {
    const std::size_t count = 1000 + 3;
    auto ring = make_ring_allreduce(*rt, placement, count);
    TowerBuffers towers(*rt, placement, count);
    EXPECT_EQ(average_once(*ring, towers), "");
  }
}

TEST(Ring, WaitsForWorkEnqueuedBeforeIt) {
  // Tower 2's upload lands late; a ring that did not wait for it would sum stale zeros.
  auto rt = host_runtime(4);
  const std::size_t count = 4096 + 5;
  auto ring = make_ring_allreduce(*rt, round_robin(4, 4), count);
  TowerBuffers towers(*rt, round_robin(4, 4), count);
  towers.upload_late(/*slow=*/2, 50);
  ring->average(towers.buffers(), count, towers.streams());
  EXPECT_EQ(first_mismatch(towers.download(), expected_mean(4, count)), "");
}

TEST(Ring, LaterWorkOnAStreamMayOverwriteItsBuffer) {
  // After average(), each tower keeps its result and zeroes its buffer at once (as a next
  // backward pass would overwrite gradients). Its right neighbour must have finished
  // reading that buffer by then, or it would gather zeros.
  auto rt = host_runtime(4);
  const std::size_t count = 1 << 16;
  auto ring = make_ring_allreduce(*rt, round_robin(4, 4), count);
  TowerBuffers towers(*rt, round_robin(4, 4), count);
  TowerBuffers results(*rt, round_robin(4, 4), count);
  towers.upload();
  busy_kernel(towers.stream(1), 20);  // make tower 1 the slow one, so the others run ahead
  ring->average(towers.buffers(), count, towers.streams());
  towers.keep_then_overwrite(results);
  towers.synchronize();
  EXPECT_EQ(first_mismatch(results.download(), expected_mean(4, count)), "");
}

TEST(Ring, RejectsCallsThatDoNotMatchItsSetup) {
  auto rt = host_runtime(2);
  auto ring = make_ring_allreduce(*rt, std::vector<int>{0, 1}, 16);
  EXPECT_EQ(ring->name(), "ring");
  TowerBuffers two(*rt, {0, 1}, 32);
  EXPECT_THROW(ring->average(two.buffers(), 17, two.streams()), std::invalid_argument);
  TowerBuffers swapped(*rt, {1, 0}, 16);
  EXPECT_THROW(ring->average(swapped.buffers(), 16, swapped.streams()), std::invalid_argument);
  TowerBuffers three(*rt, {0, 1, 1}, 16);
  EXPECT_THROW(ring->average(three.buffers(), 16, three.streams()), std::invalid_argument);
  EXPECT_THROW(make_ring_allreduce(*rt, std::vector<int>{0, 2}, 16), std::invalid_argument);
  EXPECT_THROW(make_ring_allreduce(*rt, std::vector<int>{}, 16), std::invalid_argument);
}

TEST(Nccl, OnTheHostBackendSaysToUseTheRing) {
  auto rt = host_runtime(2);
  try {
    make_nccl_allreduce(*rt, std::vector<int>{0, 1});
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("ring"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace towers

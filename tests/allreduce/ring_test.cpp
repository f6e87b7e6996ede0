// SPDX-License-Identifier: MIT
// The ring all-reduce on simulated devices: what only the ring does, its chunks, the exact
// mean itself for a power of two towers, the trace of its steps; and NCCL's refusal on the
// host. What every all-reduce must do (the exact mean for any count, towers sharing a
// device, reuse, ordering, refusals) is checked for the ring and device0 alike in
// contract_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "parallel/allreduce.hpp"
#include "trace/trace.hpp"
#include "tower_buffers.hpp"

namespace towers {
namespace {

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

class RingTowers : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Towers1To8, RingTowers, ::testing::Range(1, 9));

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

// SPDX-License-Identifier: MIT
// Chapter 3's averaging as an all-reduce (--allreduce device0, chapter 4's baseline): the
// exact mean on every tower, in chapter 3's order of sums; towers sharing a device; reuse;
// ordering after the towers' earlier work and before their later work; its trace.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/pipeline_trace.hpp"
#include "parallel/allreduce.hpp"
#include "tower_buffers.hpp"

namespace towers {
namespace {

using testing::average_once;
using testing::expected_mean;
using testing::first_mismatch;
using testing::host_runtime;
using testing::round_robin;
using testing::TowerBuffers;

class DeviceZeroTowers : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Towers1To5, DeviceZeroTowers, ::testing::Range(1, 6));

TEST_P(DeviceZeroTowers, EveryTowerHoldsTheExactMean) {
  const int n = GetParam();
  auto rt = host_runtime(n);
  const std::size_t max_count = 3 * n + 2;
  auto device0 = make_device0_allreduce(*rt, round_robin(n, n), max_count);
  for (std::size_t count : std::set<std::size_t>{0, 1, max_count}) {
    TowerBuffers towers(*rt, round_robin(n, n), count);
    EXPECT_EQ(average_once(*device0, towers), "");
  }
}

TEST_P(DeviceZeroTowers, AveragesAgainThroughTheSameBuffersAndEvents) {
  const int n = GetParam();
  auto rt = host_runtime(n);
  const std::size_t count = 4 * n + 1;
  auto device0 = make_device0_allreduce(*rt, round_robin(n, n), count);
  TowerBuffers towers(*rt, round_robin(n, n), count);
  for (int round : {0, 1}) {
    towers.upload(round);
    device0->average(towers.buffers(), count, towers.streams());
    EXPECT_EQ(first_mismatch(towers.download(), expected_mean(n, count, round)), "");
  }
}

TEST(DeviceZero, SumsInTowerOrderAsChapter3Does) {
  // Values whose float sum depends on the order: tower order (1e8 + -1e8) + 1 = 1, but a
  // sum starting at tower 1, (-1e8 + 1) + 1e8, or at tower 2, (1 + 1e8) + -1e8, is 0 (the
  // 1 is lost next to 1e8): the ring's chunks start at other towers, chapter 3's do not.
  auto rt = host_runtime(3);
  auto device0 = make_device0_allreduce(*rt, round_robin(3, 3), 1);
  TowerBuffers towers(*rt, round_robin(3, 3), 1);
  const float values[] = {1e8f, -1e8f, 1.0f};
  for (int t = 0; t < 3; ++t) {
    towers.stream(t).copy(towers.buffers()[t], &values[t], sizeof(float), "set");
  }
  device0->average(towers.buffers(), 1, towers.streams());
  const float in_order = ((values[0] + values[1]) + values[2]) * (1.0f / 3.0f);
  EXPECT_EQ(first_mismatch(towers.download(), {in_order}), "");
}

TEST(DeviceZero, TowersSharingDevicesAverageToo) {
  auto rt = host_runtime(2);
  for (const auto& placement : {std::vector<int>{0, 0, 0}, round_robin(4, 2)}) {
    const std::size_t count = 1000 + 3;
    auto device0 = make_device0_allreduce(*rt, placement, count);
    TowerBuffers towers(*rt, placement, count);
    EXPECT_EQ(average_once(*device0, towers), "") << "count " << count;
  }
}

TEST(DeviceZero, WaitsForEarlierWorkAndIsWaitedForByLaterWork) {
  // Tower 2's upload lands late (a device0 that did not wait would sum stale zeros); then
  // every tower keeps its result and zeroes its buffer at once (as the next backward pass
  // overwrites gradients): that must come after the broadcast of the mean.
  auto rt = host_runtime(3);
  const std::size_t count = 1 << 14;
  auto device0 = make_device0_allreduce(*rt, round_robin(3, 3), count);
  TowerBuffers towers(*rt, round_robin(3, 3), count);
  TowerBuffers results(*rt, round_robin(3, 3), count);
  towers.upload_late(/*slow=*/2, 30);
  device0->average(towers.buffers(), count, towers.streams());
  towers.keep_then_overwrite(results);
  towers.synchronize();
  EXPECT_EQ(first_mismatch(results.download(), expected_mean(3, count)), "");
}

TEST(DeviceZero, TraceShowsItsOpsAsTheAllReduce) {
  auto rt = host_runtime(3);
  auto device0 = make_device0_allreduce(*rt, round_robin(3, 3), 64);
  TowerBuffers towers(*rt, round_robin(3, 3), 64);
  towers.upload();
  rt->trace().set_enabled(true);
  device0->average(towers.buffers(), 64, towers.streams());
  towers.synchronize();
  std::multiset<std::string> names;
  for (const TraceEvent& e : rt->trace().collect()) {
    if (e.name.rfind("device0 ", 0) == 0) {
      names.insert(e.name);
      EXPECT_EQ(e.device, 0) << e.name << ": everything runs on device 0";
      EXPECT_TRUE(is_allreduce_op(e.name)) << e.name;
    }
  }
  EXPECT_EQ(names.count("device0 peer copy"), 2u);
  EXPECT_EQ(names.count("device0 add"), 2u);
  EXPECT_EQ(names.count("device0 scale"), 1u);
  EXPECT_EQ(names.count("device0 broadcast"), 2u);
}

TEST(DeviceZero, RejectsCallsThatDoNotMatchItsSetup) {
  auto rt = host_runtime(2);
  EXPECT_THROW(make_device0_allreduce(*rt, {}, 4), std::invalid_argument);
  EXPECT_THROW(make_device0_allreduce(*rt, std::vector<int>{0, 2}, 4), std::invalid_argument);
  auto device0 = make_device0_allreduce(*rt, round_robin(2, 2), 4);
  TowerBuffers towers(*rt, round_robin(2, 2), 8);
  EXPECT_THROW(device0->average(towers.buffers(), 8, towers.streams()), std::invalid_argument);
  EXPECT_EQ(device0->name(), "device0");
}

}  // namespace
}  // namespace towers

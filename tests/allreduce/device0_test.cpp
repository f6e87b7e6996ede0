// SPDX-License-Identifier: MIT
// Chapter 3's averaging as an all-reduce (--allreduce device0, chapter 4's baseline): what
// only device0 does, its sums in chapter 3's order and its ops on device 0 in the trace.
// What every all-reduce must do (the exact mean, reuse, ordering, refusals) is checked
// for device0 and the ring alike in contract_test.cpp.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "harness/pipeline_trace.hpp"
#include "parallel/allreduce.hpp"
#include "tower_buffers.hpp"

namespace towers {
namespace {

using testing::first_mismatch;
using testing::host_runtime;
using testing::round_robin;
using testing::TowerBuffers;

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

}  // namespace
}  // namespace towers

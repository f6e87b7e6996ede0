// SPDX-License-Identifier: MIT
// The spans a rank sends to rank 0 (src/mpi/rank_trace): everything the merged analysis
// reads must survive the trip, the kernel stamps included (issue 26: without them chapter
// 5's max_concurrent_ranks on cuda came from event spans, where a rank waiting inside an
// NCCL kernel for its peer counts as busy, so it read N every time).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mpi/rank_trace.hpp"

namespace towers {
namespace {

TraceEvent stamped_span() {
  TraceEvent e;
  e.device = 0;
  e.stream = 2;
  e.tower = 0;
  e.step = 7;
  e.name = "nccl all-reduce";
  e.start_us = 100.0;
  e.end_us = 180.0;
  e.ran_us = {{110.0, 120.5}, {150.25, 160.0}};
  e.stamped = true;
  return e;
}

TEST(RankTrace, SpansKeepTheirKernelStampsShiftedOntoRankZerosClock) {
  TraceEvent plain = stamped_span();
  plain.name = "conv1 forward";
  plain.ran_us.clear();
  plain.stamped = false;
  const std::string text = serialize_rank_events({stamped_span(), plain}, 1, 1000.0);
  std::vector<TraceEvent> events;
  parse_rank_events(text, 1, events);
  ASSERT_EQ(events.size(), 2u);
  const TraceEvent& e = events[0];
  EXPECT_EQ(e.device, 1) << "rank 1's device is the job's device 1";
  EXPECT_EQ(e.stream, 2);
  EXPECT_EQ(e.step, 7);
  EXPECT_EQ(e.name, "nccl all-reduce");
  EXPECT_DOUBLE_EQ(e.start_us, 1100.0);
  EXPECT_TRUE(e.stamped);
  ASSERT_EQ(e.ran_us.size(), 2u);
  EXPECT_DOUBLE_EQ(e.ran_us[0].first, 1110.0);
  EXPECT_DOUBLE_EQ(e.ran_us[0].second, 1120.5);
  EXPECT_DOUBLE_EQ(e.ran_us[1].first, 1150.25);
  EXPECT_FALSE(events[1].stamped);
  EXPECT_TRUE(events[1].ran_us.empty());
  EXPECT_EQ(events[1].name, "conv1 forward") << "a name with a space survives";
}

TEST(RankTrace, OnlyRankZeroSendsHostSpansAndNoRankSendsMarkers) {
  TraceEvent host;
  host.name = "enqueue";
  TraceEvent marker = stamped_span();
  marker.kind = TraceKind::kRecord;
  std::vector<TraceEvent> from_one, from_zero;
  parse_rank_events(serialize_rank_events({host, marker, stamped_span()}, 1, 0), 1, from_one);
  parse_rank_events(serialize_rank_events({host, marker, stamped_span()}, 0, 0), 0, from_zero);
  EXPECT_EQ(from_one.size(), 1u);
  ASSERT_EQ(from_zero.size(), 2u);
  EXPECT_EQ(from_zero[0].device, -1) << "rank 0's host row stays a host row";
}

}  // namespace
}  // namespace towers

// SPDX-License-Identifier: MIT
// Trace analysis on hand-made intervals, where the right answer is known.
#include <gtest/gtest.h>

#include <vector>

#include "trace/analysis.hpp"

namespace towers {
namespace {

// A span of `tower` on `device`, stream 0, from `start_ms` to `end_ms`.
TraceEvent span(int device, int tower, double start_ms, double end_ms, int step = 0) {
  return TraceEvent{device, 0, tower, step, "op", start_ms * 1000, end_ms * 1000};
}

TEST(TraceAnalysis, StaircaseHasOneTowerAtATimeAndNoOverlap) {
  std::vector<TraceEvent> events = {span(0, 0, 0, 10), span(1, 1, 10, 20), span(2, 2, 20, 30)};
  StepAnalysis a = analyze_step(events, 0);
  EXPECT_EQ(a.max_concurrent_towers, 1) << "touching intervals are not concurrent";
  EXPECT_DOUBLE_EQ(a.overlap, 0.0);
  EXPECT_DOUBLE_EQ(a.device_ms, 30.0);
  EXPECT_DOUBLE_EQ(a.tower_busy_ms, 30.0);
}

TEST(TraceAnalysis, StackedTowersAreAllConcurrent) {
  std::vector<TraceEvent> events = {span(0, 0, 0, 10), span(1, 1, 0, 10), span(2, 2, 0, 10),
                                    span(3, 3, 0, 10)};
  StepAnalysis a = analyze_step(events, 0);
  EXPECT_EQ(a.max_concurrent_towers, 4);
  EXPECT_DOUBLE_EQ(a.overlap, 1.0);
}

TEST(TraceAnalysis, PartialOverlapIsTheSharedFractionOfBusyTime) {
  // Tower 0 busy 0-10, tower 1 busy 5-15: busy 15 ms, two towers for 5 of them.
  std::vector<TraceEvent> events = {span(0, 0, 0, 10), span(1, 1, 5, 15)};
  StepAnalysis a = analyze_step(events, 0);
  EXPECT_EQ(a.max_concurrent_towers, 2);
  EXPECT_NEAR(a.overlap, 5.0 / 15.0, 1e-12);
}

TEST(TraceAnalysis, OpsOfOneTowerOnTwoStreamsCountAsOneTower) {
  // A tower's copy stream and compute stream overlap: still one tower busy.
  std::vector<TraceEvent> events = {span(0, 0, 0, 10), TraceEvent{0, 1, 0, 0, "copy", 2000, 8000}};
  EXPECT_EQ(analyze_step(events, 0).max_concurrent_towers, 1);
}

TEST(TraceAnalysis, OpsOfNoTowerAndHostSpansDoNotCountAsTowers) {
  std::vector<TraceEvent> events = {span(0, 0, 0, 10), span(0, -1, 0, 10),
                                    TraceEvent{-1, -1, -1, 0, "enqueue", 0, 2000}};
  StepAnalysis a = analyze_step(events, 0);
  EXPECT_EQ(a.max_concurrent_towers, 1);
  EXPECT_DOUBLE_EQ(a.host_enqueue_ms, 2.0);
}

TEST(TraceAnalysis, StepsAreAnalysedSeparately) {
  std::vector<TraceEvent> events = {span(0, 0, 0, 10, 0), span(1, 1, 10, 20, 0),
                                    span(0, 0, 30, 40, 1), span(1, 1, 30, 40, 1)};
  auto steps = analyze_steps(events);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].max_concurrent_towers, 1);
  EXPECT_EQ(steps[1].max_concurrent_towers, 2);
  EXPECT_EQ(analyze_step(events, -1).max_concurrent_towers, 2) << "-1 means every step";
}

}  // namespace
}  // namespace towers

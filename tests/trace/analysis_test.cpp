// SPDX-License-Identifier: MIT
// Trace analysis on hand-made intervals, where the right answer is known.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "trace/analysis.hpp"

#include "tower_spans.hpp"

namespace towers {
namespace {

using testing::span;

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

// A cuda op of `tower`: the stream held it from `start_ms` to `end_ms` (its event pair),
// and its own kernels ran during `ran_ms` (their %globaltimer stamps).
TraceEvent stamped_op(int tower, double start_ms, double end_ms,
                      std::vector<std::pair<double, double>> ran_ms) {
  TraceEvent e{0, tower, tower, 0, "op", start_ms * 1000, end_ms * 1000};
  for (auto [from, to] : ran_ms) e.ran_us.push_back({from * 1000, to * 1000});
  e.stamped = true;
  return e;
}

TEST(TraceAnalysis, KernelQueuedBehindAnotherStreamIsOnlyStreamOccupancy) {
  // One GPU, two streams. Tower 0's kernel fills the GPU from 0 to 10 ms. Tower 1's stream
  // reaches its op at 1 ms (its start event completes), but its kernel waits for room
  // until 10 ms and runs to 20 ms. The event spans overlap for 9 ms; the kernels never ran
  // together.
  std::vector<TraceEvent> events = {stamped_op(0, 0, 10, {{0, 10}}),
                                    stamped_op(1, 1, 20, {{10, 20}})};
  StepAnalysis a = analyze_step(events, 0);
  EXPECT_TRUE(a.from_kernel_stamps);
  EXPECT_EQ(a.stream_concurrent_towers, 2) << "both streams held work from 1 to 10 ms";
  EXPECT_NEAR(a.stream_overlap, 9.0 / 20.0, 1e-12);
  EXPECT_EQ(a.max_concurrent_towers, 1) << "no two kernels ran at the same time";
  EXPECT_DOUBLE_EQ(a.overlap, 0.0);
  EXPECT_DOUBLE_EQ(a.tower_busy_ms, 20.0);
}

TEST(TraceAnalysis, KernelsThatRanTogetherAreConcurrent) {
  // Small kernels that leave room on the GPU: tower 1's runs 4-12 ms beside tower 0's 0-10.
  std::vector<TraceEvent> events = {stamped_op(0, 0, 10, {{0, 10}}),
                                    stamped_op(1, 0, 12, {{4, 12}})};
  StepAnalysis a = analyze_step(events, 0);
  EXPECT_EQ(a.max_concurrent_towers, 2);
  EXPECT_NEAR(a.overlap, 6.0 / 12.0, 1e-12);
  EXPECT_NEAR(a.stream_overlap, 10.0 / 12.0, 1e-12);
}

TEST(TraceAnalysis, OnlyTheKernelsOfAnOpCountNotTheGapsBetweenThem) {
  // Tower 0's op launches two kernels with a cuBLAS GEMM between them (0-3 and 8-10 ms);
  // tower 1's kernel runs 4-7 ms, inside tower 0's span but between its kernels. A GEMM
  // carries no stamps: it counts as idle (a lower bound), never as running.
  std::vector<TraceEvent> events = {stamped_op(0, 0, 10, {{0, 3}, {8, 10}}),
                                    stamped_op(1, 0, 7, {{4, 7}}), stamped_op(1, 0, 10, {})};
  StepAnalysis a = analyze_step(events, 0);
  EXPECT_EQ(a.stream_concurrent_towers, 2);
  EXPECT_EQ(a.max_concurrent_towers, 1);
  EXPECT_DOUBLE_EQ(a.tower_busy_ms, 8.0);
}

TEST(TraceAnalysis, UnstampedSpansOfAStampedStepCountAsIdle) {
  // A copy (no kernel of ours) or an op whose stamp was lost spans the whole step on
  // tower 1; with stamps in the step, only stamped kernels say what ran.
  TraceEvent copy{0, 1, 1, 0, "copy", 0, 10000};
  std::vector<TraceEvent> events = {stamped_op(0, 0, 10, {{0, 10}}), copy};
  StepAnalysis a = analyze_step(events, 0);
  EXPECT_TRUE(a.from_kernel_stamps);
  EXPECT_EQ(a.max_concurrent_towers, 1);
  EXPECT_EQ(a.stream_concurrent_towers, 2);
}

// An op whose kernels launched but whose stamps were lost (the ring was full, or a record
// was reused before it was read) is idle to the stamp analysis, as above; it is counted,
// so that the program can say its stamp numbers read low (lost_stamp_ops).
TEST(TraceAnalysis, OpsWhoseStampsWereLostAreCounted) {
  TraceEvent lost{0, 1, 1, 0, "relu", 0, 10};
  lost.stamps_lost = true;
  TraceEvent other_step = lost;
  other_step.step = 1;
  std::vector<TraceEvent> events = {stamped_op(0, 0, 10, {{0, 10}}), lost, other_step};
  StepAnalysis a = analyze_step(events, 0);
  EXPECT_EQ(a.lost_stamp_ops, 1) << "step 0's one op; step 1's is its own step's";
  EXPECT_EQ(a.max_concurrent_towers, 1) << "the lost op counts as idle";
  EXPECT_EQ(analyze_step({stamped_op(0, 0, 10, {{0, 10}})}, 0).lost_stamp_ops, 0);
}

TEST(TraceAnalysis, LostStampsWarningNamesTheCountTheKeyAndWhatToDo) {
  EXPECT_EQ(lost_stamps_warning(0), "") << "nothing lost: no line";
  const std::string line = lost_stamps_warning(3);
  EXPECT_NE(line.find("warning: 3 traced op(s)"), std::string::npos) << line;
  EXPECT_NE(line.find("lost_stamp_ops"), std::string::npos) << line;
  EXPECT_NE(line.find("max_concurrent_towers"), std::string::npos) << line;
  EXPECT_NE(line.find("fewer towers per device"), std::string::npos) << line;
}

TEST(TraceAnalysis, SpansWithoutStampsAreWhatRanOnTheHost) {
  // Host backend: a span is a worker thread running the op; both views agree.
  std::vector<TraceEvent> events = {span(0, 0, 0, 10), span(1, 1, 5, 15)};
  StepAnalysis a = analyze_step(events, 0);
  EXPECT_FALSE(a.from_kernel_stamps);
  EXPECT_EQ(a.max_concurrent_towers, 2);
  EXPECT_EQ(a.stream_concurrent_towers, 2);
  EXPECT_DOUBLE_EQ(a.overlap, a.stream_overlap);
}

}  // namespace
}  // namespace towers

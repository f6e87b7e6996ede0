// SPDX-License-Identifier: MIT
// The pipeline schedules of chapter 9, as pure lists of ops: each stage runs every
// micro-batch's F and B once per chunk, a backward only after its forward, the stages'
// orders never wait on each other in a cycle, 1F1B holds at most p - s activations where
// GPipe holds m, and the ideal timeline's bubble is the closed form (p-1)/(v*m + p-1).
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "parallel/pipeline_schedule.hpp"

namespace towers {
namespace {

constexpr PipelineSchedule kGpipe = PipelineSchedule::kGpipe;
constexpr PipelineSchedule k1F1B = PipelineSchedule::kOneFOneB;
constexpr PipelineSchedule kInterleaved = PipelineSchedule::kInterleaved;

// Every valid shape with p in {1, 2, 3, 4, 8}, m in {1, 2, 3, 4, 8, 16}, v in {1, 2, 3}.
std::vector<std::pair<PipelineSchedule, PipelineShape>> shapes() {
  std::vector<std::pair<PipelineSchedule, PipelineShape>> all;
  for (auto schedule : {kGpipe, k1F1B, kInterleaved}) {
    for (int p : {1, 2, 3, 4, 8}) {
      for (int m : {1, 2, 3, 4, 8, 16}) {
        for (int v : {1, 2, 3}) {
          PipelineShape shape{p, m, v};
          if (pipeline_shape_problem(schedule, shape).empty()) all.push_back({schedule, shape});
        }
      }
    }
  }
  return all;
}

std::string describe(PipelineSchedule schedule, const PipelineShape& shape) {
  return to_string(schedule) + " p=" + std::to_string(shape.stages) +
         " m=" + std::to_string(shape.micro_batches) + " v=" + std::to_string(shape.chunks);
}

TEST(PipelineSchedule, SmallCasesAreTheTextbookOrders) {
  const PipelineShape shape{4, 6, 1};
  EXPECT_EQ(to_string(stage_schedule(kGpipe, shape, 1)), "F0 F1 F2 F3 F4 F5 B0 B1 B2 B3 B4 B5");
  // 1F1B: stage s warms up with p-s-1 forwards, then alternates, then drains.
  EXPECT_EQ(to_string(stage_schedule(k1F1B, shape, 0)), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  EXPECT_EQ(to_string(stage_schedule(k1F1B, shape, 2)), "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5");
  EXPECT_EQ(to_string(stage_schedule(k1F1B, shape, 3)), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
  for (int s = 0; s < 4; ++s) EXPECT_EQ(warmup_forwards(k1F1B, shape, s), 3 - s);
  // Interleaved, p=2 v=2 m=4: groups of 2 micro-batches pass chunk 0, then chunk 1.
  const PipelineShape two{2, 4, 2};
  EXPECT_EQ(to_string(stage_schedule(kInterleaved, two, 1), true),
            "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
  EXPECT_EQ(warmup_forwards(kInterleaved, two, 0), 4);  // 2*(p-s-1) + (v-1)*p
  EXPECT_EQ(warmup_forwards(kInterleaved, two, 1), 2);
}

// What chapter 9's `warmup_forwards` key means (Megatron-LM's num_warmup_microbatches):
// the forwards before the steady state, whose first pair is one more forward and then the
// first backward. So a stage runs warmup + 1 forwards before its first backward (1F1B:
// p - s), or all of them when the warm-up is all (GPipe, or too few micro-batches).
TEST(PipelineSchedule, WarmupForwardsAreTheForwardsBeforeTheSteadyStatesFirstPair) {
  for (const auto& [schedule, shape] : shapes()) {
    const int total = shape.micro_batches * shape.chunks;
    for (int s = 0; s < shape.stages; ++s) {
      const int warmup = warmup_forwards(schedule, shape, s);
      const auto ops = stage_schedule(schedule, shape, s);
      int before_first_backward = 0;
      while (ops[before_first_backward].pass == Pass::kForward) ++before_first_backward;
      EXPECT_EQ(before_first_backward, warmup < total ? warmup + 1 : total)
          << describe(schedule, shape) << " stage " << s << ": " << to_string(ops, true);
      if (schedule == k1F1B && shape.micro_batches >= shape.stages - s) {
        EXPECT_EQ(before_first_backward, shape.stages - s) << describe(schedule, shape);
      }
    }
  }
}

TEST(PipelineSchedule, EachMicroBatchRunsForwardAndBackwardOncePerChunkOnEveryStage) {
  for (const auto& [schedule, shape] : shapes()) {
    for (int s = 0; s < shape.stages; ++s) {
      const auto ops = stage_schedule(schedule, shape, s);
      std::map<std::tuple<char, int, int>, int> seen;
      std::map<std::pair<int, int>, int> position_of_forward;
      for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
        const auto& op = ops[i];
        ++seen[{static_cast<char>(op.pass), op.micro_batch, op.chunk}];
        if (op.pass == Pass::kForward) position_of_forward[{op.micro_batch, op.chunk}] = i;
        else
          EXPECT_TRUE(position_of_forward.contains({op.micro_batch, op.chunk}))
              << describe(schedule, shape) << " stage " << s << ": " << to_string(op, true)
              << " before its forward";
      }
      EXPECT_EQ(static_cast<int>(ops.size()), 2 * shape.micro_batches * shape.chunks)
          << describe(schedule, shape);
      for (const auto& [op, count] : seen) EXPECT_EQ(count, 1) << describe(schedule, shape);
      EXPECT_EQ(static_cast<int>(seen.size()), 2 * shape.micro_batches * shape.chunks);
    }
  }
}

TEST(PipelineSchedule, TheIdealTimelineRespectsEveryDependencyAndNeverDeadlocks) {
  for (const auto& [schedule, shape] : shapes()) {
    std::vector<std::vector<TimedOp>> timeline;
    ASSERT_NO_THROW(timeline = simulate_pipeline(schedule, shape, 1.0, 2.0))
        << describe(schedule, shape);
    std::map<std::tuple<int, char, int, int>, double> end_of;
    for (int s = 0; s < shape.stages; ++s) {
      for (const auto& t : timeline[s]) {
        end_of[{s, static_cast<char>(t.op.pass), t.op.micro_batch, t.op.chunk}] = t.end;
      }
    }
    for (int s = 0; s < shape.stages; ++s) {
      double free_at = 0;
      for (const auto& t : timeline[s]) {
        EXPECT_GE(t.start, free_at) << "a stage runs one op at a time";
        free_at = t.end;
        if (auto before = dependency(shape, s, t.op)) {
          const auto& b = *before;
          EXPECT_GE(t.start, (end_of[{b.stage, static_cast<char>(b.op.pass), b.op.micro_batch,
                                      b.op.chunk}]))
              << describe(schedule, shape) << " stage " << s << " " << to_string(t.op, true);
        }
      }
    }
  }
}

TEST(PipelineSchedule, AnOrderThatWaitsInACycleIsCaught) {
  // Stage 0 insists on B0 before F1, stage 1 on F1 before B0: each waits for the other.
  const PipelineShape shape{2, 2, 1};
  const std::vector<std::vector<StageOp>> orders{
      {{Pass::kForward, 0}, {Pass::kBackward, 0}, {Pass::kForward, 1}, {Pass::kBackward, 1}},
      {{Pass::kForward, 1}, {Pass::kForward, 0}, {Pass::kBackward, 0}, {Pass::kBackward, 1}}};
  EXPECT_THROW(simulate_orders(shape, orders, 1.0, 2.0), std::logic_error);
}

TEST(PipelineSchedule, OneFOneBHoldsAtMostPMinusSActivationsWhereGpipeHoldsM) {
  for (int p : {2, 4, 8}) {
    for (int m : {1, 4, 8, 16}) {
      const PipelineShape shape{p, m, 1};
      for (int s = 0; s < p; ++s) {
        EXPECT_EQ(peak_stashed_activations(stage_schedule(kGpipe, shape, s)), m);
        const int one_f_one_b = peak_stashed_activations(stage_schedule(k1F1B, shape, s));
        EXPECT_EQ(one_f_one_b, std::min(m, p - s)) << "p=" << p << " m=" << m << " s=" << s;
        EXPECT_LE(one_f_one_b, p);
      }
    }
  }
}

TEST(PipelineSchedule, TheIdealTimelinesBubbleIsTheClosedForm) {
  for (const auto& [schedule, shape] : shapes()) {
    for (double backward_ratio : {1.0, 2.0}) {
      const auto timeline = simulate_pipeline(schedule, shape, 1.0, backward_ratio);
      EXPECT_NEAR(bubble_fraction(timeline), ideal_bubble_fraction(schedule, shape), 1e-9)
          << describe(schedule, shape) << " backward " << backward_ratio << "x forward";
    }
  }
  EXPECT_DOUBLE_EQ(ideal_bubble_fraction(k1F1B, {4, 8, 1}), 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(ideal_bubble_fraction(kInterleaved, {4, 8, 2}), 3.0 / 19.0);
  EXPECT_DOUBLE_EQ(ideal_bubble_fraction(kGpipe, {1, 8, 1}), 0.0);
}

TEST(PipelineSchedule, ShapesThatCannotRunAreRefusedWithWhatToChange) {
  EXPECT_NE(pipeline_shape_problem(kGpipe, {0, 4, 1}).find("--stages"), std::string::npos);
  EXPECT_NE(pipeline_shape_problem(k1F1B, {2, 0, 1}).find("--micro-batches"), std::string::npos);
  EXPECT_NE(pipeline_shape_problem(k1F1B, {2, 4, 2}).find("interleaved"), std::string::npos);
  EXPECT_NE(pipeline_shape_problem(kInterleaved, {2, 4, 1}).find("1f1b"), std::string::npos);
  EXPECT_NE(pipeline_shape_problem(kInterleaved, {4, 6, 2}).find("try 8"), std::string::npos);
  EXPECT_TRUE(pipeline_shape_problem(kInterleaved, {4, 8, 2}).empty());
  EXPECT_THROW(stage_schedule(kInterleaved, {4, 6, 2}, 0), std::invalid_argument);
  EXPECT_EQ(parse_stage_op("B12.3"), (StageOp{Pass::kBackward, 12, 3}));
  EXPECT_EQ(parse_stage_op(to_string(StageOp{Pass::kForward, 0, 1}, true)),
            (StageOp{Pass::kForward, 0, 1}));
  for (const char* bad : {"F3", "busy", "F.1", "F1.", "X1.0", "F1.x", "F-1.0"}) {
    EXPECT_FALSE(parse_stage_op(bad).has_value()) << bad;
  }
  EXPECT_EQ(parse_pipeline_schedule("1f1b"), k1F1B);
  EXPECT_EQ(parse_pipeline_schedule("interleaved"), kInterleaved);
  EXPECT_FALSE(parse_pipeline_schedule("pipedream").has_value());
}

}  // namespace
}  // namespace towers

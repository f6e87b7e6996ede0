// SPDX-License-Identifier: MIT
// Chapter 9's claims, each read from the program's own trace on simulated devices: the
// bubble is the closed form (p-1)/(v*m + p-1); 1F1B holds at most p - s micro-batches'
// activations on stage s where GPipe holds all m; the stages take turns (no op starts
// before the op it depends on has ended, and the data arrives in order); bad flags are
// refused before any work.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>

#include "program.hpp"

namespace towers {
namespace {

using testing::ProgramRun;
using testing::run;

ProgramRun pipeline(const std::string& args) { return run("09_pipeline", "--backend host " + args); }

struct BubbleCase {
  std::string schedule;
  int stages, micro_batches, chunks;
};

// Measured bubble against the closed form. The stages' "kernels" are sleeps, the
// hand-offs cost microseconds and the stages start together once the whole flush is
// enqueued (the start gate), so even on a loaded 2-core machine the fastest of three
// flushes lands within 0.01 of the formula (bench/results/2026-12-03-host-2core-pipeline.md,
// load 8 to 9.6). What moves a single run is per-op jitter: a sleep that overshoots or a
// worker that wakes late, 0.1-0.5 ms or, when six builds share two cores, tens of ms. On
// the critical path jitter adds idle time (the share rises); off it, it fills idle slots
// (the share falls). Hence: measured within [formula - 0.02, formula + 0.04], and one of
// up to 5 runs must pass (it stops at the first that does), so runs slowed by neighbours
// do not fail the test. A wrong schedule still fails every run: GPipe's or 1F1B's bubble
// passed off as interleaved is 0.2 or 0.27 where 0.11 or 0.16 is claimed.
constexpr double kBelow = 0.02;
constexpr double kAbove = 0.04;

// Names the case in test output instead of printing its bytes.
void PrintTo(const BubbleCase& c, std::ostream* out) {
  *out << c.schedule << " p=" << c.stages << " m=" << c.micro_batches << " v=" << c.chunks;
}

class Chapter9Bubble : public ::testing::TestWithParam<BubbleCase> {};

TEST_P(Chapter9Bubble, MeasuredFromTheTraceMeetsTheClosedForm) {
  const BubbleCase& c = GetParam();
  const std::string args = "--kernel-ms 10 --schedule " + c.schedule + " --stages " +
                           std::to_string(c.stages) + " --micro-batches " +
                           std::to_string(c.micro_batches) + " --virtual " +
                           std::to_string(c.chunks);
  const double formula =
      (c.stages - 1.0) / (c.chunks * c.micro_batches + c.stages - 1.0);
  std::string errors, outputs;
  bool met = false;
  for (int attempt = 0; attempt < 5 && !met; ++attempt) {
    const ProgramRun r = pipeline(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NEAR(r.number("bubble_formula"), formula, 0.0005) << r.output;
    const double error = r.number("bubble_share") - formula;
    met = error >= -kBelow && error <= kAbove;
    errors += " " + std::to_string(error);
    outputs += r.output;
  }
  EXPECT_TRUE(met) << "measured - formula in each run:" << errors << " (allowed: -" << kBelow
                   << " to +" << kAbove << ")\n" << outputs;
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, Chapter9Bubble,
    ::testing::Values(BubbleCase{"gpipe", 2, 4, 1}, BubbleCase{"gpipe", 4, 8, 1},
                      BubbleCase{"1f1b", 2, 1, 1}, BubbleCase{"1f1b", 2, 8, 1},
                      BubbleCase{"1f1b", 4, 4, 1}, BubbleCase{"1f1b", 4, 16, 1},
                      BubbleCase{"interleaved", 2, 4, 2}, BubbleCase{"interleaved", 4, 8, 2}),
    [](const auto& info) {
      return info.param.schedule + "_p" + std::to_string(info.param.stages) + "_m" +
             std::to_string(info.param.micro_batches) + "_v" + std::to_string(info.param.chunks);
    });

TEST(Chapter9, OneFOneBHoldsAtMostPActivationsWhereGpipeHoldsM) {
  const auto one_f_one_b = pipeline("--kernel-ms 2 --schedule 1f1b --stages 4 --micro-batches 8");
  ASSERT_EQ(one_f_one_b.exit_code, 0) << one_f_one_b.output;
  // Read from the order the stage's spans ran in: stage s holds p - s at most.
  EXPECT_EQ(one_f_one_b.last("peak_activations_per_stage"), "4,3,2,1") << one_f_one_b.output;
  EXPECT_EQ(one_f_one_b.last("peak_activations"), "4");
  EXPECT_EQ(one_f_one_b.last("warmup_forwards"), "3,2,1,0");
  const auto gpipe = pipeline("--kernel-ms 2 --schedule gpipe --stages 4 --micro-batches 8");
  ASSERT_EQ(gpipe.exit_code, 0) << gpipe.output;
  EXPECT_EQ(gpipe.last("peak_activations_per_stage"), "8,8,8,8") << gpipe.output;
  EXPECT_EQ(gpipe.last("peak_activations"), "8");
}

TEST(Chapter9, StagesTakeTurnsInDependencyOrder) {
  for (const std::string schedule : {"gpipe", "1f1b", "interleaved"}) {
    const std::string chunks = schedule == "interleaved" ? "2" : "1";
    const auto r = pipeline("--kernel-ms 1 --stages 3 --micro-batches 6 --schedule " +
                            schedule + " --virtual " + chunks);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.number("stage_ops"), 2 * 6 * 3 * std::stod(chunks)) << r.output;
    EXPECT_EQ(r.last("order_violations"), "0") << r.output;
    EXPECT_EQ(r.last("data_checked"), "yes") << r.output;
  }
}

// Concurrency without timing: each stage probes inside its forward of micro-batch
// min(p-s-1, m-1). With m >= p the pipeline fills and every stage is inside its probe at
// once; with fewer micro-batches than stages at most m stages ever run together, and with
// one micro-batch the stages take turns: each probe times out alone.
TEST(Chapter9, TheRendezvousMeetsOnceThePipelineIsFull) {
  for (const std::string schedule : {"gpipe", "1f1b", "interleaved --virtual 2"}) {
    const auto r = pipeline("--kernel-ms 2 --stages 4 --micro-batches 8 --probe --schedule " +
                            schedule);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.last("rendezvous"), "met") << schedule << "\n" << r.output;
    EXPECT_EQ(r.last("probe_concurrent_stages"), "4") << schedule << "\n" << r.output;
  }
}

TEST(Chapter9, WithFewerMicroBatchesThanStagesAtMostMStagesRunAtOnce) {
  for (const int m : {1, 2}) {
    const auto r = pipeline("--kernel-ms 2 --stages 4 --probe --micro-batches " + std::to_string(m));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.last("rendezvous"), "timeout") << "m=" << m << "\n" << r.output;
    EXPECT_EQ(r.last("probe_concurrent_stages"), std::to_string(m)) << r.output;
  }
}

TEST(Chapter9, WithoutTheWaitsTheTraceShowsOpsOutOfOrder) {
  // The same enqueue order with the event waits left out: the stages no longer take
  // turns, which the trace reading above must see, and the gradients come out wrong.
  const auto r = pipeline("--kernel-ms 2 --stages 3 --micro-batches 4 --skip-waits");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_GT(r.number("order_violations"), 0.0) << r.output;
  EXPECT_EQ(r.last("data_checked"), "no") << r.output;
  EXPECT_NE(r.output.find("ran before the activations or gradient"), std::string::npos);
}

TEST(Chapter9, BadFlagsAreRefusedBeforeTheRun) {
  const std::pair<std::string, std::string> cases[] = {
      {"--schedule pipedream", "not a schedule; use gpipe, 1f1b or interleaved"},
      {"--schedule 1f1b --virtual 2", "needs --schedule interleaved"},
      {"--schedule interleaved --virtual 1", "needs --virtual 2 or more"},
      {"--schedule interleaved --virtual 2 --stages 4 --micro-batches 6", "multiple of --stages"},
      {"--stages 0", "--stages"},
      {"--micro-batches 0", "--micro-batches"},
      {"--kernel-ms 0", "--kernel-ms"},
      {"--backward-ratio -1", "--backward-ratio"},
  };
  for (const auto& [flags, message] : cases) {
    const auto r = pipeline(flags);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << flags << "\n" << r.output;
    EXPECT_EQ(r.output.find("stage 0"), std::string::npos) << "ran before refusing: " << flags;
    EXPECT_TRUE(r.summaries.empty()) << flags;
  }
}

}  // namespace
}  // namespace towers

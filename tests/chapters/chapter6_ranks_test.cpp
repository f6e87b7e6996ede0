// SPDX-License-Identifier: MIT
// Chapter 6 across processes (06_overlap_ranks), started with mpiexec as a learner does:
// each rank's buckets are all-reduced between the ranks on its communication stream while
// the backward pass goes on, and the parameters are those of one-process chapter 6 and of
// chapter 5, bit for bit; a killed rank ends the job naming it; the flags of the simulated
// link are refused; a job killed with SIGKILL and resumed ends byte for byte where an
// uninterrupted one ends, and --eval reports precision @ 1 once.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "../data/temp_dir.hpp"
#include "data/cifar10.hpp"
#include "exact_resume.hpp"
#include "program.hpp"
#include "ranks.hpp"

namespace towers {
namespace {

using testing::run;

const std::string kSmallRanks = "--backend host --batch-size 8 --log-every 1 ";

std::filesystem::path ranks_temp(const std::string& name) {
  return testing::temp_file("towers-ch6-ranks", name);
}

using testing::bytes_of;

testing::ProgramRun run_overlap_ranks(int ranks, const std::string& args,
                                      const std::string& program = "06_overlap_ranks") {
  return testing::run_ranks(program, ranks, args);
}

// Two ranks: one addition per element (a + b == b + a), so one-process chapter 6, chapter
// 5 and chapter 6 across ranks, with any buckets or all-reduce, end with the same bits.
TEST(OverlapRanks, TwoRanksEqualOneProcessChapter6AndChapter5BitForBit) {
  const std::string steps = kSmallRanks + "--steps 3 ";
  auto one = ranks_temp("one-process.ckpt"), ch5 = ranks_temp("ch5.ckpt"),
       mpi = ranks_temp("ranks-mpi.ckpt"), ring = ranks_temp("ranks-ring.ckpt");
  auto a = run("06_overlap", steps + "--devices 2 --save-params " + one.string());
  auto b = run_overlap_ranks(2, steps + "--save-params " + ch5.string(), "05_ranks");
  auto c = run_overlap_ranks(2, steps + "--save-params " + mpi.string());
  auto d = run_overlap_ranks(2, steps + "--allreduce ring --bucket-mb 1 --save-params " + ring.string());
  for (const auto* r : {&a, &b, &c, &d}) ASSERT_EQ(r->exit_code, 0) << r->output;
  EXPECT_EQ(c.last("ranks"), "2") << c.output;
  EXPECT_EQ(c.last("overlap_mode"), "on");
  EXPECT_EQ(c.last("buckets"), "5") << "one bucket per layer by default";
  const std::string params = bytes_of(one);
  ASSERT_FALSE(params.empty());
  EXPECT_TRUE(params == bytes_of(ch5)) << "chapter 5 differs from one-process chapter 6";
  EXPECT_TRUE(params == bytes_of(mpi)) << "ranks with MPI_Allreduce per bucket differ";
  EXPECT_TRUE(params == bytes_of(ring)) << "ranks with the ring per 1 MiB bucket differ";
}

// Four ranks, the ring over MPI_Sendrecv per bucket: the same chunks of each bucket and the
// same order of sums as one-process chapter 6's ring over the same buckets.
TEST(OverlapRanks, FourRanksRingEqualsOneProcessChapter6sRingBitForBit) {
  const std::string flags = kSmallRanks + "--steps 3 --allreduce ring --bucket-mb 1 --check-every 1 ";
  auto one = ranks_temp("one-process-4.ckpt"), ranks = ranks_temp("ranks-4.ckpt");
  auto a = run("06_overlap", flags + "--devices 4 --save-params " + one.string());
  auto b = run_overlap_ranks(4, flags + "--save-params " + ranks.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(b.last("param_checks"), "3") << "the ranks' copies compared every step\n" << b.output;
  EXPECT_TRUE(bytes_of(one) == bytes_of(ranks)) << "4 ranks differ from 4 towers";
  EXPECT_EQ(a.last("final_loss"), b.last("final_loss"));
}

// From the trace: with overlap on, the buckets' all-reduces (communication stream) run
// while the backward pass (compute stream) still runs; off, after it, never together.
TEST(OverlapRanks, TheBucketsAllReduceDuringTheBackwardPassOnlyWithOverlapOn) {
  auto on = run_overlap_ranks(2, kSmallRanks + "--steps 3");
  auto off = run_overlap_ranks(2, kSmallRanks + "--steps 3 --overlap off");
  ASSERT_EQ(on.exit_code, 0) << on.output;
  ASSERT_EQ(off.exit_code, 0) << off.output;
  EXPECT_GT(on.number("overlap_comm"), 0.0) << on.output;
  EXPECT_EQ(off.number("overlap_comm"), 0.0) << off.output;
  EXPECT_EQ(off.last("buckets"), "1");
}

TEST(OverlapRanks, AKilledRankEndsTheJobNamingIt) {
  auto r = run_overlap_ranks(2, kSmallRanks + "--steps 50 --fail-rank 1 --fail-at-step 2 --fail-how kill");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "timed out\n" << r.output;
  EXPECT_TRUE(r.summaries.empty()) << r.output;
  EXPECT_NE(r.output.find("process rank 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("signal 9"), std::string::npos) << r.output;
}

TEST(OverlapRanks, TheSimulatedLinksFlagsAreRefused) {
  auto r = run_overlap_ranks(2, kSmallRanks + "--steps 1 --link-gbps 1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("scripts/two-hosts up --rate"), std::string::npos) << r.output;
}

// Ten steps in one go, and ten again saving every step but with every rank SIGKILLed once
// rank 0 has logged step 3, then resumed: the last checkpoint (parameters, moving averages,
// input position) and --save-params are equal byte for byte (kill_nine.hpp). On the tiny
// set an epoch is 3 steps of 2 ranks x 4, so the run crosses epochs and the kill lands
// mid-epoch; the resumed job's iterators must start at the global batch where the killed
// one stood, each rank on its own shard.
TEST(OverlapRanks, KillNineAndResumeContinuesByteForByte) {
  data::testing::TempDir dir;
  testing::tiny_set(dir.path());  // the files; its flags are for one process of 2 devices
  const std::string flags = "--backend host --batch-size 4 --log-every 1 --bucket-mb 1 --data-dir " +
                            dir.path().string() + " ";
  testing::expect_kill_nine_and_exact_resume(dir.path(), flags, testing::two_ranks("06_overlap_ranks"));
}

// --eval: rank 0 evaluates the moving averages once (one line, one summary key); a test
// set rank 0 cannot read ends every rank before step 0 with one message.
TEST(OverlapRanks, EvalPrintsPrecisionOnceAndAMissingTestSetIsRefusedBeforeStepZero) {
  data::testing::TempDir dir;
  testing::tiny_set(dir.path());
  const std::string flags = "--backend host --batch-size 4 --steps 2 --data-dir " + dir.path().string() + " ";
  auto r = run_overlap_ranks(2, flags + "--eval");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.last("precision_at_1").empty()) << r.output;
  const auto first = r.output.find("precision @ 1 = ");
  EXPECT_NE(first, std::string::npos) << r.output;
  EXPECT_EQ(first, r.output.rfind("precision @ 1 = ")) << "one rank evaluates\n" << r.output;

  std::filesystem::remove(data::test_file(dir.path()));
  auto refused = run_overlap_ranks(2, flags + "--eval");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_EQ(refused.output.find(": step 0,"), std::string::npos) << "refused after training\n"
                                                                   << refused.output;
  EXPECT_TRUE(refused.summaries.empty()) << refused.output;
}

}  // namespace
}  // namespace towers

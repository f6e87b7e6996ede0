// SPDX-License-Identifier: MIT
// Chapter 6 across processes (06_overlap_ranks), started with mpiexec as a learner does:
// each rank's buckets are all-reduced between the ranks on its communication stream while
// the backward pass goes on, and the parameters are those of one-process chapter 6 and of
// chapter 5, bit for bit; a killed rank ends the job naming it; the flags of the simulated
// link are refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "base/process.hpp"
#include "program.hpp"

namespace towers {
namespace {

using testing::run;

const std::string kSmallRanks = "--backend host --batch-size 8 --log-every 1 ";

std::filesystem::path ranks_temp(const std::string& name) {
  return testing::temp_file("towers-ch6-ranks", name);
}

std::string file_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// mpiexec -n `ranks` `program` `args`, bounded so that a hang fails instead of stalling.
testing::ProgramRun run_overlap_ranks(int ranks, const std::string& args,
                                      const std::string& program = "06_overlap_ranks") {
  testing::ProgramRun result;
  auto ran = base::run_command("timeout -k 10 90 " TOWERS_MPIEXEC
                               " --allow-run-as-root --oversubscribe -n " + std::to_string(ranks) +
                               " " TOWERS_BIN_DIR "/" + program + " " + args + " 2>&1");
  result.exit_code = ran.exit_code;
  result.output = std::move(ran.output);
  result.summaries = parse_summaries(result.output);
  return result;
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
  const std::string params = file_bytes(one);
  ASSERT_FALSE(params.empty());
  EXPECT_TRUE(params == file_bytes(ch5)) << "chapter 5 differs from one-process chapter 6";
  EXPECT_TRUE(params == file_bytes(mpi)) << "ranks with MPI_Allreduce per bucket differ";
  EXPECT_TRUE(params == file_bytes(ring)) << "ranks with the ring per 1 MiB bucket differ";
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
  EXPECT_TRUE(file_bytes(one) == file_bytes(ranks)) << "4 ranks differ from 4 towers";
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

}  // namespace
}  // namespace towers

// SPDX-License-Identifier: MIT
// Grader of exercise 06: runs your ring_average() on N ranks through mpiexec (the worker,
// worker.cpp) and checks every rank's line. Set TOWERS_EXERCISE_06_WORKER to grade another
// worker build (CI grades the mutants so).
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "base/process.hpp"

namespace {

struct RankLine {
  int rank = -1, sendrecv = -1, collectives = -1;
  double exact_error = 1e30;
  long mismatches = -1;
  std::string error;
};

struct Job {
  std::string output;
  std::vector<RankLine> ranks;  // in rank order when every rank reported
};

Job run(int ranks, std::size_t count, const std::string& kind) {
  const char* env = std::getenv("TOWERS_EXERCISE_06_WORKER");
  const std::string worker = env ? env : TOWERS_EXERCISE_06_WORKER;
  const std::string command = "timeout -k 5 20 " TOWERS_MPIEXEC " --allow-run-as-root --oversubscribe -n " +
                              std::to_string(ranks) + " " + worker + " " + std::to_string(count) +
                              " " + kind + " 2>&1";
  Job job;
  job.output = towers::base::run_command(command).output;
  const std::regex pattern(R"(rank (\d+) sendrecv=(\d+) collectives=(\d+) exact_error=(\S+) reference_mismatches=(\d+) error=(.*))");
  job.ranks.resize(ranks);
  for (auto it = std::sregex_iterator(job.output.begin(), job.output.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    RankLine r;
    r.rank = std::stoi((*it)[1]);
    r.sendrecv = std::stoi((*it)[2]);
    r.collectives = std::stoi((*it)[3]);
    r.exact_error = std::stod((*it)[4]);
    r.mismatches = std::stol((*it)[5]);
    r.error = (*it)[6];
    if (r.rank >= 0 && r.rank < ranks) job.ranks[r.rank] = r;
  }
  return job;
}

// Every rank reported, without an error, and holds chapter 4's bits.
void expect_ring_result(const Job& job, double exact_tolerance) {
  for (std::size_t r = 0; r < job.ranks.size(); ++r) {
    const RankLine& line = job.ranks[r];
    ASSERT_EQ(line.rank, static_cast<int>(r)) << "rank " << r << " did not report\n" << job.output;
    EXPECT_EQ(line.error, "none") << job.output;
    EXPECT_EQ(line.mismatches, 0) << "rank " << r << ": elements differ from chapter 4's ring\n"
                                  << job.output;
    EXPECT_LE(line.exact_error, exact_tolerance) << "rank " << r << "\n" << job.output;
  }
}

TEST(MpiRing, FourRanksGiveTheExactMeanOfSmallIntegers) {
  // Integer sums are exact and 1/4 scales exactly: any correct ring gives the exact mean.
  expect_ring_result(run(4, 1001, "ints"), 0.0);
}

TEST(MpiRing, ThreeRanksMatchChapter4sRingBitForBit) {
  expect_ring_result(run(3, 1000, "random"), 1e-6);
}

TEST(MpiRing, FiveRanksWithUnevenChunksMatchBitForBit) {
  expect_ring_result(run(5, 1003, "random"), 1e-6);
}

TEST(MpiRing, TwoRanksGiveTheExactMean) { expect_ring_result(run(2, 64, "ints"), 0.0); }

TEST(MpiRing, FewerElementsThanRanksStillWork) {
  expect_ring_result(run(5, 3, "random"), 1e-6);  // two chunks are empty
}

TEST(MpiRing, EveryRankSendsTwoNMinusOneMessagesAndNoCollective) {
  const Job job = run(4, 100, "random");
  expect_ring_result(job, 1e-6);
  for (const RankLine& line : job.ranks) {
    EXPECT_EQ(line.sendrecv, 6) << "rank " << line.rank << ": 2(n-1) = 6 MPI_Sendrecv calls\n"
                                << job.output;
    EXPECT_EQ(line.collectives, 0) << "rank " << line.rank
                                   << ": the ring uses MPI_Sendrecv only\n" << job.output;
  }
}

TEST(MpiRing, OneRankLeavesItsBufferAndSendsNothing) {
  const Job job = run(1, 10, "random");
  expect_ring_result(job, 0.0);
  EXPECT_EQ(job.ranks[0].sendrecv, 0) << job.output;
}

TEST(MpiRing, NoDataSendsNothing) {
  const Job job = run(3, 0, "random");
  expect_ring_result(job, 0.0);
  for (const RankLine& line : job.ranks) EXPECT_EQ(line.sendrecv, 0) << job.output;
}

}  // namespace

// SPDX-License-Identifier: MIT
// Grader of exercise 06: runs your ring_average() on N ranks through mpiexec (the worker,
// worker.cpp) and checks every rank's line. The worker watches every MPI call through the
// profiling interface: what each MPI_Sendrecv carries (communicator, neighbours, bytes and
// the floats themselves) and any other call, which the ring must not make. The ring runs
// on MPI_COMM_WORLD, on the world numbered backwards, and on two interleaved halves of it.
// Set TOWERS_EXERCISE_06_WORKER to grade another worker build (CI grades the mutants so).
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "base/process.hpp"

namespace {

struct RankLine {
  int rank = -1, size = 0, world = -1, sendrecv = -1;
  long long reduce_scatter_bytes = -1, all_gather_bytes = -1;
  double exact_error = 1e30;
  long mismatches = -1;
  std::string violation, error;
};

struct Job {
  std::string output;
  std::vector<RankLine> ranks;  // by rank in the world, when every rank reported
};

// `layout`: world, reversed (the world numbered backwards) or halves (two rings).
Job run(int ranks, std::size_t count, const std::string& kind,
        const std::string& layout = "world") {
  const char* env = std::getenv("TOWERS_EXERCISE_06_WORKER");
  const std::string worker = env ? env : TOWERS_EXERCISE_06_WORKER;
  const std::string command = "timeout -k 5 20 " TOWERS_MPIEXEC
                              " --allow-run-as-root --oversubscribe -n " +
                              std::to_string(ranks) + " " + worker + " " + std::to_string(count) +
                              " " + kind + " " + layout + " 2>&1";
  Job job;
  job.output = towers::base::run_command(command).output;
  const std::regex pattern(
      R"(rank (\d+) of (\d+) world (\d+) sendrecv=(\d+) reduce_scatter_bytes=(\d+) )"
      R"(all_gather_bytes=(\d+) exact_error=(\S+) reference_mismatches=(\d+) )"
      R"(violation=(.*) error=(.*))");
  job.ranks.resize(ranks);
  for (auto it = std::sregex_iterator(job.output.begin(), job.output.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    RankLine r;
    r.rank = std::stoi((*it)[1]);
    r.size = std::stoi((*it)[2]);
    r.world = std::stoi((*it)[3]);
    r.sendrecv = std::stoi((*it)[4]);
    r.reduce_scatter_bytes = std::stoll((*it)[5]);
    r.all_gather_bytes = std::stoll((*it)[6]);
    r.exact_error = std::stod((*it)[7]);
    r.mismatches = std::stol((*it)[8]);
    r.violation = (*it)[9];
    r.error = (*it)[10];
    if (r.world >= 0 && r.world < ranks) job.ranks[r.world] = r;
  }
  return job;
}

// Elements of chunk `index` of `count` split `n` ways (mpi_ring.hpp's chunk_of).
long long chunk_size(std::size_t count, int n, int index) {
  const auto parts = static_cast<std::size_t>(n);
  const auto i = static_cast<std::size_t>(((index % n) + n) % n);
  return static_cast<long long>(count / parts + (i < count % parts ? 1 : 0));
}

// Every rank reported, without an error or a violation the worker saw, holds chapter 4's
// bits, and sent (n-1)/n of the buffer in each half of the ring: every chunk but the one
// it ends up owning in the reduce-scatter, every chunk but the one it receives last in the
// all-gather, 2(n-1) MPI_Sendrecv calls in all.
void expect_ring_result(const Job& job, std::size_t count, double exact_tolerance) {
  for (std::size_t w = 0; w < job.ranks.size(); ++w) {
    const RankLine& line = job.ranks[w];
    ASSERT_EQ(line.world, static_cast<int>(w))
        << "expected a line from world rank " << w << ", got none (it crashed or hung: see "
        << "the output)\n" << job.output;
    EXPECT_EQ(line.violation, "none")
        << "rank " << line.rank << " of " << line.size << ": expected only the ring's "
        << "MPI_Sendrecv calls, each carrying its chunk; hint: see mpi_ring.hpp's schedule\n"
        << job.output;
    EXPECT_EQ(line.error, "none") << job.output;
    EXPECT_EQ(line.mismatches, 0)
        << "rank " << line.rank << ": elements differ from chapter 4's ring; hint: add each "
        << "received chunk into chunk r-1-s, scale only the chunk r+1 you own by the float "
        << "1.0f / n (a multiplication), and gather each chunk into its own place\n" << job.output;
    EXPECT_LE(line.exact_error, exact_tolerance) << "rank " << line.rank << "\n" << job.output;
    const int n = line.size, r = line.rank;
    const bool ring = n > 1 && count > 0;
    const long long total = static_cast<long long>(count) * 4;
    EXPECT_EQ(line.sendrecv, ring ? 2 * (n - 1) : 0)
        << "rank " << r << " of " << n << ": expected 2(n-1) MPI_Sendrecv calls; hint: one per "
        << "step of each half, n-1 steps each, also for empty chunks\n" << job.output;
    EXPECT_EQ(line.reduce_scatter_bytes, ring ? total - 4 * chunk_size(count, n, r + 1) : 0)
        << "rank " << r << " of " << n << ": expected the reduce-scatter to send every chunk "
        << "but chunk r+1, once; hint: at step s send chunk r-s, only that chunk\n" << job.output;
    EXPECT_EQ(line.all_gather_bytes, ring ? total - 4 * chunk_size(count, n, r + 2) : 0)
        << "rank " << r << " of " << n << ": expected the all-gather to send every chunk but "
        << "chunk r+2, once; hint: at step t send chunk r+1-t (the one you own first), only "
        << "that chunk\n" << job.output;
  }
}

TEST(MpiRing, FourRanksGiveTheExactMeanOfSmallIntegers) {
  // Integer sums are exact and 1/4 scales exactly: any correct ring gives the exact mean.
  expect_ring_result(run(4, 1001, "ints"), 1001, 0.0);
}

TEST(MpiRing, ThreeRanksMatchChapter4sRingBitForBit) {
  expect_ring_result(run(3, 1000, "random"), 1000, 1e-6);
}

TEST(MpiRing, FiveRanksWithUnevenChunksMatchBitForBit) {
  expect_ring_result(run(5, 1003, "random"), 1003, 1e-6);
}

TEST(MpiRing, TwoRanksGiveTheExactMean) { expect_ring_result(run(2, 64, "ints"), 64, 0.0); }

TEST(MpiRing, FewerElementsThanRanksStillWork) {
  expect_ring_result(run(5, 3, "random"), 3, 1e-6);  // two chunks are empty
}

TEST(MpiRing, RanksNumberedBackwardsRingOnTheGivenCommunicator) {
  // The same processes, ranks reversed: a ring on MPI_COMM_WORLD sends to the wrong
  // neighbours and mixes up whose chunk is whose.
  expect_ring_result(run(4, 101, "random", "reversed"), 101, 1e-6);
}

TEST(MpiRing, TwoRingsOnInterleavedHalvesOfTheWorld) {
  // Ranks 0, 2, 4 and ranks 1, 3 each run their own ring, numbered backwards, at once.
  expect_ring_result(run(5, 1003, "random", "halves"), 1003, 1e-6);
}

TEST(MpiRing, OneRankLeavesItsBufferAndSendsNothing) {
  expect_ring_result(run(1, 10, "random"), 10, 0.0);
}

TEST(MpiRing, NoDataSendsNothing) { expect_ring_result(run(3, 0, "random"), 0, 0.0); }

}  // namespace

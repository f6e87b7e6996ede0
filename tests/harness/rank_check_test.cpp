// SPDX-License-Identifier: MIT
// harness/rank_check, run by ctest under mpiexec on 2 ranks: equal copies pass on every
// rank, and after --inject-divergence every rank throws the same message naming the ranks.
// Every rank runs every test; main() fails when any rank failed, so mpiexec's exit status
// is the job's.
#include "harness/rank_check.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/runtime.hpp"

namespace towers {
namespace {

MpiJob* job = nullptr;  // made in main(): MPI_Init once per process

constexpr std::size_t kCount = 8;

TEST(RankParameterCheck, EqualCopiesPassAndAnInjectedUlpStopsEveryRank) {
  auto rt = Runtime::create({BackendChoice::kHost, 1});
  Tower tower;
  tower.device = &rt->device(0);
  tower.stream = tower.device->create_stream();
  Buffer params = tower.device->allocate(kCount * sizeof(float));
  const std::vector<float> start(kCount, 0.75f);
  tower.stream->copy(params.data(), start.data(), kCount * sizeof(float));
  tower.stream->synchronize();
  Watchdog watchdog(*job, std::chrono::seconds(30));
  RankParameterCheck check(tower, kCount, CheckFlags{/*check_every=*/1, /*inject=*/1},
                           /*steps=*/5, *job, watchdog);
  check.after_step(0, params.as<float>());
  EXPECT_EQ(check.checks(), 1);
  try {
    check.after_step(1, params.as<float>());
    ADD_FAILURE() << "rank " << job->rank() << ": the injected divergence passed";
  } catch (const std::runtime_error& e) {
    const std::string last = std::to_string(job->size() - 1);
    EXPECT_NE(std::string(e.what()).find("rank " + last + " has checksum"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace towers

int main(int argc, char** argv) {
  towers::MpiJob job(&argc, &argv);
  towers::job = &job;
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any_failed;
}

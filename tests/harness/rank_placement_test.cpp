// SPDX-License-Identifier: MIT
// Where a rank trains (src/harness/rank_placement): on a GPU machine each rank is shown
// only its own GPU, so it opens one CUDA context instead of one per GPU (issue 26); a
// launcher's own binding is kept; with more ranks than GPUs nothing is bound. The GPUs are
// counted from a fake /proc/driver/nvidia/gpus here; the backend is the host's, so no test
// starts CUDA.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "base/temp_dir.hpp"
#include "harness/rank_placement.hpp"

namespace towers {
namespace {

// The variables these tests set, cleared before each test and restored as they were after.
constexpr const char* kVariables[] = {"CUDA_VISIBLE_DEVICES", "TOWERS_GPU_OF_LOCAL_RANK",
                                      "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                      "SLURM_LOCALID"};

// A fake driver folder with `gpus` GPU entries, and the environment of kVariables cleared.
class RankPlacement : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVariables) {
      if (const char* v = std::getenv(name)) saved_.emplace_back(name, v);
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    for (const char* name : kVariables) ::unsetenv(name);
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  std::string driver_with(int gpus) {
    for (int i = 0; i < gpus; ++i) {
      std::filesystem::create_directories(dir_.path() / ("0000:0" + std::to_string(i) + ":00.0"));
    }
    return (dir_.path()).string();
  }
  static std::string visible() {
    const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
    return v ? v : "(unset)";
  }
  TrainingFlags host_flags() {
    TrainingFlags flags;
    flags.runtime.backend = BackendChoice::kHost;
    return flags;
  }

  base::TempDir dir_{"rank_placement_test"};
  std::vector<std::pair<std::string, std::string>> saved_;
};

TEST_F(RankPlacement, CountsTheDriversGpusWithoutStartingCuda) {
  EXPECT_EQ(driver_gpu_count(driver_with(3).c_str()), 3);
  EXPECT_EQ(driver_gpu_count("/nonexistent/towers/driver"), 0);
}

TEST_F(RankPlacement, EachRankIsShownOnlyItsOwnGpu) {
  const std::string driver = driver_with(4);
  TrainingFlags flags = host_flags();
  place_one_tower_per_rank(flags, /*rank=*/6, /*local_rank=*/2, driver.c_str());
  EXPECT_EQ(visible(), "2") << "local rank 2 sees GPU 2 only";
  EXPECT_EQ(flags.layout.towers, 1);
  EXPECT_EQ(flags.layout.first_index, 6) << "tower index = rank: it reads the rank's shard";
  EXPECT_EQ(flags.layout.first_device, 0) << "the one GPU it sees";
  EXPECT_EQ(flags.runtime.devices, 1);
}

TEST_F(RankPlacement, ALaunchersBindingIsKept) {
  const std::string driver = driver_with(4);
  ::setenv("CUDA_VISIBLE_DEVICES", "3,1", 1);
  TrainingFlags flags = host_flags();
  place_one_tower_per_rank(flags, 1, 1, driver.c_str());
  EXPECT_EQ(visible(), "3,1");
  EXPECT_EQ(flags.layout.first_device, 1) << "local rank modulo the GPUs the launcher shows";
}

TEST_F(RankPlacement, MoreRanksThanGpusBindsNothing) {
  const std::string driver = driver_with(2);
  TrainingFlags flags = host_flags();
  place_one_tower_per_rank(flags, 2, 2, driver.c_str());
  EXPECT_EQ(visible(), "(unset)") << "no GPU 2 to show; NCCL's UUID check refuses sharing";
  EXPECT_EQ(flags.layout.first_device, 2);
  EXPECT_EQ(flags.runtime.devices, 1) << "host backend: one simulated device per rank";
}

// A CUDA-aware MPI may start CUDA inside MPI_Init, after which CUDA_VISIBLE_DEVICES is
// read no more: run_rank_program chooses the GPU before, from the launcher's environment.
TEST_F(RankPlacement, TheLaunchersLocalRankIsReadBeforeMpiStarts) {
  EXPECT_FALSE(launcher_local_rank().has_value()) << "no launcher in this test's environment";
  ::setenv("SLURM_LOCALID", "5", 1);
  EXPECT_EQ(launcher_local_rank(), 5);
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  EXPECT_EQ(launcher_local_rank(), 3) << "Open MPI's mpirun says it first";
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3x", 1);
  EXPECT_EQ(launcher_local_rank(), 5) << "a value that is no rank is passed over";
}

// The GPU chosen before MPI_Init is the rank's own, not a launcher's: place_one_tower_per_rank
// then puts the tower on device 0, the one GPU the process sees (with the old code, which
// took any CUDA_VISIBLE_DEVICES for a launcher's, it chose device 2 of 1).
TEST_F(RankPlacement, AGpuChosenBeforeMpiInitIsKeptAsTheRanksOwn) {
  const std::string driver = driver_with(4);
  ASSERT_TRUE(show_only_gpu_of_local_rank(2, driver.c_str()));
  EXPECT_EQ(visible(), "2");
  TrainingFlags flags = host_flags();
  place_one_tower_per_rank(flags, /*rank=*/6, /*local_rank=*/2, driver.c_str());
  EXPECT_EQ(visible(), "2");
  EXPECT_EQ(flags.layout.first_device, 0) << "the one GPU it sees";
  EXPECT_EQ(flags.runtime.devices, 1);
}

TEST_F(RankPlacement, BeforeMpiInitTheLaunchersBindingIsKeptToo) {
  const std::string driver = driver_with(4);
  ::setenv("CUDA_VISIBLE_DEVICES", "3,1", 1);
  EXPECT_FALSE(show_only_gpu_of_local_rank(1, driver.c_str()));
  EXPECT_EQ(visible(), "3,1");
}

}  // namespace
}  // namespace towers

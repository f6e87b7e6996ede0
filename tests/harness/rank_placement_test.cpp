// SPDX-License-Identifier: MIT
// Where a rank trains (src/harness/rank_placement): on a GPU machine each rank is shown
// only its own GPU, so it opens one CUDA context instead of one per GPU (issue 26); a
// launcher's own binding is kept; with more ranks than GPUs nothing is bound. The GPUs are
// counted from a fake /proc/driver/nvidia/gpus here; the backend is the host's, so no test
// starts CUDA.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "base/temp_dir.hpp"
#include "harness/rank_placement.hpp"

namespace towers {
namespace {

// A fake driver folder with `gpus` GPU entries, and CUDA_VISIBLE_DEVICES cleared (restored
// as it was afterwards).
class RankPlacement : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) saved_ = v;
    ::unsetenv("CUDA_VISIBLE_DEVICES");
  }
  void TearDown() override {
    if (saved_) ::setenv("CUDA_VISIBLE_DEVICES", saved_->c_str(), 1);
    else ::unsetenv("CUDA_VISIBLE_DEVICES");
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
  std::optional<std::string> saved_;
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

}  // namespace
}  // namespace towers

// SPDX-License-Identifier: MIT
#include "base/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace towers::base {
namespace {

TEST(TempDir, IsCreatedEmptyAndRemovedWithItsContents) {
  std::filesystem::path kept;
  {
    TempDir dir("base-test");
    kept = dir.path();
    ASSERT_TRUE(std::filesystem::is_directory(kept));
    EXPECT_TRUE(std::filesystem::is_empty(kept));
    std::ofstream(kept / "file") << "x";
  }
  EXPECT_FALSE(std::filesystem::exists(kept));
}

TEST(TempDir, StartsEmptyEvenWhenALeftoverHadTheSameName) {
  TempDir first("base-leftover");
  std::ofstream(first.path() / "old") << "x";
  TempDir second("base-leftover");
  EXPECT_EQ(first.path(), second.path());
  EXPECT_TRUE(std::filesystem::is_empty(second.path()));
}

}  // namespace
}  // namespace towers::base

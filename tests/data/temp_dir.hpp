// SPDX-License-Identifier: MIT
// TempDir: base::TempDir named after the running test, so that a leftover folder says
// which test left it.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "base/temp_dir.hpp"

namespace towers::data::testing {

/// A unique empty folder named after the running test; removed (with its contents) on
/// destruction.
class TempDir : public base::TempDir {
 public:
  TempDir() : base::TempDir(test_name()) {}

 private:
  static std::string test_name() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string(info->test_suite_name()) + "-" + info->name();
  }
};

}  // namespace towers::data::testing

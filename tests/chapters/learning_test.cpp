// SPDX-License-Identifier: MIT
// Chapter 1 learns: on the embedded synthetic set, host backend, fixed seed, evaluation
// with the moving averages reaches 90 % precision @ 1 within a step budget that runs in
// under two minutes on a 2-core machine (batch 32 instead of the tutorial's 128 keeps
// the number of SGD steps, not images, as the budget).
#include <gtest/gtest.h>

#include "program.hpp"

namespace towers {
namespace {

TEST(Learning, ReachesNinetyPercentOnTheSyntheticSet) {
  auto r = testing::run("01_single_gpu",
                        "--backend host --steps 600 --batch-size 32 --log-every 100 --seed 1 --eval");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::printf("%s", r.output.c_str());
  EXPECT_GE(r.number("precision_at_1"), 0.90) << r.output;
}

}  // namespace
}  // namespace towers

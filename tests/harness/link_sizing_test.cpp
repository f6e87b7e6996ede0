// SPDX-License-Identifier: MIT
// --link-gbps auto (harness/link_sizing.hpp): the link it chooses makes one ring
// all-reduce of every gradient exactly as long as the backward pass it measured, for any
// tower count; one tower needs no link; and the formula it solves is the ring's.
#include "harness/link_sizing.hpp"

#include <gtest/gtest.h>

#include "model/parameters.hpp"

namespace towers {
namespace {

TEST(LinkSizing, TheRingsFormulaIsTwoNMinusOneHopsOfOneNth) {
  // 2 towers on a 1 Gb/s link: 2 hops of half the gradients, 4 bytes each.
  const double half_bits = 8.0 * 4.0 * model::kNumParameters / 2;
  EXPECT_DOUBLE_EQ(ring_allreduce_ms(2, 1.0), 2 * half_bits / 1e9 * 1000);
  // 4 towers: 6 hops of a quarter: 1.5 times the bytes of 2 towers' ring.
  EXPECT_DOUBLE_EQ(ring_allreduce_ms(4, 1.0), 1.5 * ring_allreduce_ms(2, 1.0));
  EXPECT_EQ(ring_allreduce_ms(1, 1.0), 0.0);  // one tower sends nothing
}

TEST(LinkSizing, OneAllReduceOnTheChosenLinkTakesTheMeasuredBackwardPass) {
  for (int towers : {2, 4}) {
    const LinkSizing sizing = size_link_to_backward(towers, 8);
    ASSERT_GT(sizing.backward_ms, 0) << towers;
    ASSERT_GT(sizing.gbps, 0) << towers;
    EXPECT_NEAR(ring_allreduce_ms(towers, sizing.gbps), sizing.backward_ms,
                1e-9 * sizing.backward_ms) << towers;
    EXPECT_DOUBLE_EQ(sizing.allreduce_ms, ring_allreduce_ms(towers, sizing.gbps));
    EXPECT_NE(sizing.describe(towers).find("link: --link-gbps auto"), std::string::npos);
  }
}

TEST(LinkSizing, OneTowerNeedsNoLink) {
  const LinkSizing sizing = size_link_to_backward(1, 8);
  EXPECT_EQ(sizing.gbps, 0.0);
  EXPECT_EQ(sizing.backward_ms, 0.0);  // nothing measured: nothing to size
}

}  // namespace
}  // namespace towers

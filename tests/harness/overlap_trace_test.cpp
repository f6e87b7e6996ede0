// SPDX-License-Identifier: MIT
// harness/overlap_trace on hand-made spans: the share of all-reduce time that ran while the
// same device computed, and the rest per step and device; warm-up step left out.
#include "harness/overlap_trace.hpp"

#include <gtest/gtest.h>

#include <string>

#include "hand_made_spans.hpp"
#include "trace/span_names.hpp"

namespace towers {
namespace {

using testing::op;

const std::string kRing = span::ring_reduce_scatter("1/2");

TEST(OverlapTrace, CountsOnlyComputeOnTheSameDeviceAndStep) {
  OverlapTrace trace;
  trace.collect({op(0, 0, 0, kRing, 0, 100000)});  // the warm-up step: left out
  trace.collect({
      op(0, 0, 1, kRing, 1000, 3000),          // device 0: all-reduce 2 ms...
      op(0, 0, 1, "conv1_grad", 0, 2000),      // ...of which 1 ms under its compute
      op(1, 1, 1, kRing, 1000, 3000),          // device 1: 2 ms, none hidden:
      op(1, 1, 1, std::string(span::kCopyInput), 0, 9000),  // input is not compute,
      op(1, 1, 0, "conv1_grad", 1000, 3000),   // nor is another step's op
  });
  EXPECT_DOUBLE_EQ(trace.overlap_comm(), 1000.0 / 4000.0);
  EXPECT_DOUBLE_EQ(trace.exposed_comm_ms(), (4000.0 - 1000.0) / 1000.0 / 2);
}

TEST(OverlapTrace, NothingToHideGivesZeros) {
  OverlapTrace trace;
  trace.collect({op(0, 0, 0, "conv1", 0, 10)});
  EXPECT_EQ(trace.overlap_comm(), 0.0);
  EXPECT_EQ(trace.exposed_comm_ms(), 0.0);
}

}  // namespace
}  // namespace towers

// SPDX-License-Identifier: MIT
// harness/overlap_trace on hand-made spans: the share of all-reduce time that ran while the
// same device computed, and the rest per step and device; warm-up step left out.
#include "harness/overlap_trace.hpp"

#include <gtest/gtest.h>

#include <string>

#include "hand_made_spans.hpp"
#include "harness/pipeline_trace.hpp"
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

// Chapter 8 measures ZeRO-3's layer gathers the same way. Other communication (the ring)
// is not the compute that hides them, nor is another gather.
TEST(OverlapTrace, MeasuresTheLayerGathersWhenAskedTo) {
  OverlapTrace trace(span::is_layer_gather);
  const std::string local3 = span::layer_gather("local3", false);
  trace.collect({
      op(0, 0, 0, local3, 0, 4000),            // 4 ms of gather...
      op(0, 0, 0, "conv2 im2col_gemm", 0, 3000),  // ...3 ms beside compute,
      op(0, 0, 0, kRing, 3000, 4000),          // the last 1 ms beside the ring only
      op(0, 0, 0, span::layer_gather("conv2", true), 3500, 4500),  // and another gather
  });
  EXPECT_DOUBLE_EQ(trace.overlap_comm(), 3000.0 / 4500.0);
  EXPECT_DOUBLE_EQ(trace.exposed_comm_ms(), 1.5);
  EXPECT_TRUE(span::is_layer_gather(span::layer_gather("conv2", true)));
  EXPECT_FALSE(span::is_layer_gather(kRing));
  EXPECT_FALSE(is_allreduce_op(local3)) << "chapter 6's overlap_comm must not count gathers";
}

TEST(OverlapTrace, NothingToHideGivesZeros) {
  OverlapTrace trace;
  trace.collect({op(0, 0, 0, "conv1", 0, 10)});
  EXPECT_EQ(trace.overlap_comm(), 0.0);
  EXPECT_EQ(trace.exposed_comm_ms(), 0.0);
}

}  // namespace
}  // namespace towers

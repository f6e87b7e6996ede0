// SPDX-License-Identifier: MIT
// harness/pipeline_trace on hand-made spans: all-reduce time per step from its first op's
// start to its last op's end, the warm-up step left out; input copies hidden by compute.
#include "harness/pipeline_trace.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hand_made_spans.hpp"
#include "trace/span_names.hpp"

namespace towers {
namespace {

using testing::op;

TEST(PipelineTrace, AllReduceTimeSpansItsOpsOnAnyStreamWarmUpLeftOut) {
  PipelineTrace trace;
  trace.collect({op(0, 0, 0, std::string(span::kNcclAllReduce), 0, 9000)});  // warm-up
  trace.collect({op(0, 0, 1, std::string(span::kNcclAllReduce), 1000, 2000),
                 op(1, 1, 1, std::string(span::kNcclAllReduce), 1500, 3000),
                 op(0, 0, 1, "conv1", 0, 5000)});
  trace.collect({op(0, 0, 2, std::string(span::kNcclAllReduce), 0, 1000)});
  EXPECT_DOUBLE_EQ(trace.mean_allreduce_ms(), (2.0 + 1.0) / 2);
}

TEST(PipelineTrace, NoAllReduceNoTime) {
  PipelineTrace trace;
  trace.collect({op(0, 0, 0, "conv1", 0, 1000), op(-1, -1, 0, std::string(span::kEnqueue), 0, 10)});
  EXPECT_EQ(trace.mean_allreduce_ms(), 0.0);
  EXPECT_EQ(trace.input_overlap(), 0.0);
}

TEST(PipelineTrace, InputOverlapIsTheShareOfCopyTimeUnderCompute) {
  PipelineTrace trace;
  // Tower 0 computes during [0, 1000); tower 1's copy runs [500, 1500): half hidden. A
  // second copy meets only another copy, which is input, not compute.
  trace.collect({op(0, 0, 0, "conv1", 0, 1000), op(1, 1, 1, std::string(span::kCopyInput), 500, 1500),
                 op(0, 0, 1, std::string(span::kCopyInput), 2000, 3000),
                 op(1, 1, 1, std::string(span::kCopyInput), 2000, 3000)});
  EXPECT_DOUBLE_EQ(trace.input_overlap(), 500.0 / 3000.0);
}

}  // namespace
}  // namespace towers

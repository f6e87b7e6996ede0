// SPDX-License-Identifier: MIT
// trace/span_names.hpp: the names the all-reduces write are the names the analysers look
// for. A ring on simulated devices is traced and fed to PipelineTrace, the analyser behind
// chapter 4's allreduce_ms: were the ring's op names and PipelineTrace's pattern to drift
// apart, allreduce_ms would read 0 with every chapter still running, and this fails.
#include <gtest/gtest.h>

#include <string>

#include "harness/pipeline_trace.hpp"
#include "parallel/allreduce.hpp"
#include "tower_buffers.hpp"
#include "trace/span_names.hpp"

namespace towers {
namespace {

using testing::round_robin;
using testing::TowerBuffers;

// Traces one step-tagged ring all-reduce over `towers` towers on as many host devices,
// its streams scoped as `scope` (chapter 10 runs g and f so) unless it is empty.
std::vector<TraceEvent> traced_ring(int towers, const std::string& scope = "") {
  auto rt = Runtime::create({BackendChoice::kHost, towers});
  const std::size_t count = 64;
  auto ring = make_ring_allreduce(*rt, round_robin(towers, towers), count);
  TowerBuffers buffers(*rt, round_robin(towers, towers), count);
  buffers.upload();
  rt->trace().set_enabled(true);
  rt->trace().set_step(0);
  for (Stream* stream : buffers.streams()) stream->set_scope(scope);
  ring->average(buffers.buffers(), count, buffers.streams());
  buffers.synchronize();
  return rt->trace().collect();
}

// Chapter 10's g and f are the ring under a scope: each analyser finds its own and only
// its own, the chapter-4 analysers count neither, and the exports colour both as
// communication.
TEST(SpanNames, ChapterTensScopedRingsAreFoundByTheirOwnNamesOnly) {
  int g_ops = 0, f_ops = 0;
  for (const auto& [scope, count] : {std::pair{span::kTensorG, &g_ops}, std::pair{span::kTensorF, &f_ops}}) {
    for (const TraceEvent& e : traced_ring(2, scope)) {
      if (e.name.find("ring") == std::string::npos) continue;
      ++*count;
      EXPECT_EQ(span::is_tensor_g(e.name), scope == span::kTensorG) << e.name;
      EXPECT_EQ(span::is_tensor_f(e.name), scope == span::kTensorF) << e.name;
      EXPECT_TRUE(span::is_tensor_collective(e.name)) << e.name;
      EXPECT_TRUE(span::is_collective(e.name)) << e.name;
      EXPECT_FALSE(is_allreduce_op(e.name)) << e.name << ": chapter 4's allreduce_ms counts it";
    }
  }
  EXPECT_GT(g_ops, 0);
  EXPECT_GT(f_ops, 0);
  EXPECT_FALSE(span::is_tensor_g("gather conv2"));  // chapter 8's layer gathers
  EXPECT_FALSE(span::is_tensor_collective("local4 gemm"));
}

TEST(SpanNames, PipelineTraceFindsTheRingsAllReduceTime) {
  PipelineTrace pipeline;
  pipeline.collect(traced_ring(3));
  EXPECT_GT(pipeline.mean_allreduce_ms(), 0.0)
      << "the analyser found none of the ring's ops: their names and span::is_allreduce differ";
}

TEST(SpanNames, EveryRingOpCountsAsAllReduceAndNothingElseDoes) {
  int ring_ops = 0;
  for (const TraceEvent& e : traced_ring(3)) {
    const bool ring = e.name.rfind("ring", 0) == 0;
    ring_ops += ring;
    EXPECT_EQ(is_allreduce_op(e.name), ring) << e.name;
  }
  EXPECT_GT(ring_ops, 0);
}

TEST(SpanNames, OneTowerHasNoAllReduceTime) {
  PipelineTrace pipeline;
  pipeline.collect(traced_ring(1));
  EXPECT_EQ(pipeline.mean_allreduce_ms(), 0.0);
}

TEST(SpanNames, EveryAllReducesNameIsRecognised) {
  for (const std::string& name : {std::string(span::kNcclAllReduce), std::string(span::kMpiAllReduce),
                                 std::string(span::kRingSendrecv), std::string(span::kRingScale),
                                 span::ring_reduce_scatter("1/2"), span::ring_reduce_scatter_add("1/2"),
                                 span::ring_all_gather("2/2")}) {
    EXPECT_TRUE(is_allreduce_op(name)) << name;
  }
  for (const char* name : {span::kEnqueue, span::kCopyInput, "conv1", "copy loss"}) {
    EXPECT_FALSE(is_allreduce_op(name)) << name;
  }
}

}  // namespace
}  // namespace towers

// SPDX-License-Identifier: MIT
// Chapter 11's plan, held to the runs that exist today. A 1-D mesh is a chapter: data
// parallelism with ZeRO 0-3 is chapter 8, tensor parallelism (and Krizhevsky's hybrid)
// chapter 10, the pipeline chapter 9's real model. For each, the program runs one step at a tiny batch on the host
// backend and every category of its memory ledger (the largest device's peak; chapter 9's
// stage by stage) must equal the plan to the byte, and its bytes on the wire per step the
// plan's for that dimension exactly (chapter 9's: the activations and gradients its stages
// send across the cuts); chapter 9's bubble formula must be the plan's. Then
// the forms themselves, table-driven: the Network's activations against a Network's own
// allocations, a tensor rank's slice against TensorSliceLayout, the split activations
// against TensorSplit, the numbers of the ZeRO and tensor forms by hand, and what the
// plan refuses, and 11_mesh --plan's keys and exit codes.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/network.hpp"
#include "model/parameters.hpp"
#include "network_activations.hpp"
#include "parallel/mesh_plan.hpp"
#include "parallel/pipeline_split.hpp"
#include "parallel/tensor_slices.hpp"
#include "parallel/tensor_split.hpp"
#include "program.hpp"
#include "runtime/runtime.hpp"

namespace towers {
namespace {

using testing::ProgramRun;
using testing::run;

constexpr int kBatch = 2;
const std::string kTiny = "--backend host --steps 1 --log-every 1 --batch-size ";

long long key(const ProgramRun& r, const std::string& name) { return std::llround(r.number(name)); }

// A mesh of dp x tp x pp devices at ZeRO stage `zero`, m micro-batches of `batch`
// images each (the forms' tests and the runs' plans alike).
MeshConfig mesh(int dp, int tp, int pp, int zero, int m = 1, int batch = kBatch,
                model::Optimizer optimizer = model::Optimizer::kSgd) {
  return MeshConfig{.dp = dp, .tp = tp, .pp = pp, .zero = zero, .micro_batches = m,
                    .batch = batch, .optimizer = optimizer};
}

MeshConfig hybrid_mesh(int towers) {
  MeshConfig c = mesh(1, towers, 1, 0);
  c.hybrid = true;
  return c;
}

std::int64_t planned(const MeshPlan& plan, MemoryCategory category) {
  return plan.device[static_cast<std::size_t>(category)];
}

// Every category the ledger has, against the plan's largest device. The host backend has
// no workspace: the program prints no key (0) and the plan says 0.
void expect_every_category(const ProgramRun& r, const MeshPlan& plan) {
  for (int c = 0; c < kMemoryCategoryCount; ++c) {
    const auto category = static_cast<MemoryCategory>(c);
    const std::string name(category_name(category));
    EXPECT_EQ(key(r, "peak_" + name + "_bytes"), planned(plan, category))
        << name << " of mesh " << plan.config.dp << "x" << plan.config.tp << "x" << plan.config.pp
        << "\n" << r.output;
  }
}

// --- Data: chapter 8, every ZeRO stage -----------------------------------------------

struct DataCase {
  int n;
  int zero;
  const char* optimizer;
  double bucket_mb;
};
void PrintTo(const DataCase& c, std::ostream* out) {
  *out << "N" << c.n << "_zero" << c.zero << "_" << c.optimizer << "_bucket" << c.bucket_mb;
}

class PlanMatchesChapter8 : public ::testing::TestWithParam<DataCase> {};
INSTANTIATE_TEST_SUITE_P(
    Data, PlanMatchesChapter8,
    ::testing::Values(DataCase{1, 0, "sgd", 0}, DataCase{2, 0, "sgd", 0}, DataCase{4, 0, "sgd", 0},
                      DataCase{1, 1, "sgd", 0}, DataCase{2, 1, "sgd", 0}, DataCase{4, 1, "sgd", 0},
                      DataCase{1, 2, "sgd", 0}, DataCase{2, 2, "sgd", 0}, DataCase{4, 2, "sgd", 0},
                      DataCase{1, 3, "sgd", 0}, DataCase{2, 3, "sgd", 0}, DataCase{4, 3, "sgd", 0},
                      DataCase{4, 1, "momentum", 0}, DataCase{4, 2, "adam", 0},
                      DataCase{2, 2, "sgd", 5}),
    [](const auto& info) {
      const DataCase& c = info.param;
      return "N" + std::to_string(c.n) + "_zero" + std::to_string(c.zero) + "_" + c.optimizer +
             (c.bucket_mb > 0 ? "_onebucket" : "");
    });

TEST_P(PlanMatchesChapter8, EveryCategoryAndTheWireToTheByte) {
  const DataCase c = GetParam();
  MeshConfig config = mesh(c.n, 1, 1, c.zero, 1, kBatch, model::parse_optimizer(c.optimizer));
  config.bucket_mb = c.bucket_mb;
  const MeshPlan plan = make_mesh_plan(config);
  EXPECT_TRUE(plan.held_by_run);
  std::string args = kTiny + std::to_string(kBatch) + " --devices " + std::to_string(c.n) +
                     " --zero " + std::to_string(c.zero) + " --optimizer " + c.optimizer;
  if (c.bucket_mb > 0) args += " --bucket-mb " + std::to_string(c.bucket_mb);
  const ProgramRun r = run("08_sharded", args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.last("towers"), std::to_string(c.n)) << r.output;
  expect_every_category(r, plan);
  EXPECT_EQ(key(r, "wire_bytes_per_step"), plan.wire_data) << r.output;
  EXPECT_EQ(plan.wire_tensor + plan.wire_pipeline, 0);
  EXPECT_EQ(plan.bubble, 0.0);
}

// --- Tensor: chapter 10 ----------------------------------------------------------------

// Runs chapter 10 for one step on `towers` devices in `mode` ("tp" or "hybrid", ring
// collectives) into `r`, and checks that it ran so and that `plan` (the same mesh) holds
// its every category and its tensor bytes, with nothing on the other dimensions.
void expect_chapter10_matches(const MeshPlan& plan, int towers, const std::string& mode,
                              ProgramRun& r) {
  r = run("10_tensor", kTiny + std::to_string(kBatch) + " --devices " + std::to_string(towers) +
                           (mode == "hybrid" ? " --hybrid" : "") + " --collectives ring");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.last("mode"), mode) << r.output;
  ASSERT_EQ(r.last("towers"), std::to_string(towers)) << r.output;
  expect_every_category(r, plan);
  EXPECT_EQ(key(r, "wire_bytes_per_step"), plan.wire_tensor) << r.output;
  EXPECT_EQ(plan.wire_data + plan.wire_pipeline, 0);
}

class PlanMatchesChapter10 : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Tensor, PlanMatchesChapter10, ::testing::Values(2, 4),
                         [](const auto& info) { return "tp" + std::to_string(info.param); });

TEST_P(PlanMatchesChapter10, EveryCategoryAndGAndFToTheByte) {
  const int t = GetParam();
  const MeshPlan plan = make_mesh_plan(mesh(1, t, 1, 0));
  EXPECT_TRUE(plan.held_by_run);
  EXPECT_EQ(plan.numerics, NumericsClass::kWithinBound);
  ProgramRun r;
  ASSERT_NO_FATAL_FAILURE(expect_chapter10_matches(plan, t, "tp", r));
  EXPECT_EQ(key(r, "wire_g_bytes_per_step") + key(r, "wire_f_bytes_per_step"), plan.wire_tensor);
}

class PlanMatchesChapter10Hybrid : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Tensor, PlanMatchesChapter10Hybrid, ::testing::Values(1, 2, 4),
                         [](const auto& info) { return "hybrid" + std::to_string(info.param); });

TEST_P(PlanMatchesChapter10Hybrid, EveryCategoryAndEveryCollectiveToTheByte) {
  const int n = GetParam();
  const MeshPlan plan = make_mesh_plan(hybrid_mesh(n));
  EXPECT_TRUE(plan.held_by_run);
  EXPECT_EQ(plan.numerics, n == 1 ? NumericsClass::kBitIdentical : NumericsClass::kWithinBound);
  ProgramRun r;
  ASSERT_NO_FATAL_FAILURE(expect_chapter10_matches(plan, n, "hybrid", r));
}

// --- Pipeline: chapter 9's real model, stage by stage -----------------------------------

struct PipeCase {
  int p;
  int m;
  const char* schedule;
};
void PrintTo(const PipeCase& c, std::ostream* out) {
  *out << "p" << c.p << "_m" << c.m << "_" << c.schedule;
}

class PlanMatchesChapter9 : public ::testing::TestWithParam<PipeCase> {};
INSTANTIATE_TEST_SUITE_P(Pipeline, PlanMatchesChapter9,
                         ::testing::Values(PipeCase{2, 1, "gpipe"}, PipeCase{2, 2, "1f1b"},
                                           PipeCase{3, 4, "gpipe"}, PipeCase{4, 4, "1f1b"},
                                           PipeCase{4, 2, "gpipe"}),
                         [](const auto& info) {
                           const PipeCase& c = info.param;
                           return "p" + std::to_string(c.p) + "_m" + std::to_string(c.m) + "_" +
                                  c.schedule;
                         });

std::string stage_list(const MeshPlan& plan, MemoryCategory category) {
  std::string text;
  for (const CategoryBytes& stage : plan.per_stage) {
    text += (text.empty() ? "" : ",") +
            std::to_string(stage[static_cast<std::size_t>(category)]);
  }
  return text;
}

TEST_P(PlanMatchesChapter9, EveryCategoryOfEveryStageToTheByteAndTheBubble) {
  const PipeCase c = GetParam();
  constexpr int kPipelineBatch = 8;
  MeshConfig config = mesh(1, 1, c.p, 0, c.m, kPipelineBatch);
  config.schedule = *parse_pipeline_schedule(c.schedule);
  const MeshPlan plan = make_mesh_plan(config);
  EXPECT_TRUE(plan.held_by_run);
  const std::string shape = " --stages " + std::to_string(c.p) + " --micro-batches " +
                            std::to_string(c.m) + " --schedule " + c.schedule;
  const ProgramRun r = run("09_pipeline", "--model cifar --backend host --steps 1 --batch-size " +
                                              std::to_string(kPipelineBatch) + shape);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(key(r, "devices"), c.p) << r.output;  // one device per stage
  expect_every_category(r, plan);
  EXPECT_EQ(key(r, "wire_bytes_per_step"), plan.wire_pipeline) << r.output;
  EXPECT_EQ(plan.wire_data + plan.wire_tensor, 0);
  for (int k = 0; k < kMemoryCategoryCount; ++k) {
    const auto category = static_cast<MemoryCategory>(k);
    if (category == MemoryCategory::kWorkspace) continue;
    const std::string name(category_name(category));
    EXPECT_EQ(r.last("peak_" + name + "_bytes_per_stage"), stage_list(plan, category))
        << name << "\n" << r.output;
  }
  // The bubble: chapter 9 prints its closed form with three decimals.
  const ProgramRun synthetic = run("09_pipeline", "--backend host --kernel-ms 0.2" + shape);
  ASSERT_EQ(synthetic.exit_code, 0) << synthetic.output;
  EXPECT_NEAR(synthetic.number("bubble_formula"), plan.bubble, 0.0005) << synthetic.output;
  EXPECT_DOUBLE_EQ(plan.bubble, (c.p - 1.0) / (c.m + c.p - 1.0));
}

// --- The forms, table-driven -------------------------------------------------------------

// The Network's activations: the plan's closed form against what a Network allocates.
TEST(MeshPlanForms, NetworkActivationsAreWhatANetworkAllocates) {
  for (int b : {1, 2, 3, 8, 32}) {
    EXPECT_EQ(4 * network_activation_floats(b),
              static_cast<std::int64_t>(testing::allocated_network_activation_bytes(b)))
        << "batch " << b;
  }
  EXPECT_EQ(network_activation_floats(1), 454486 + model::kLossCount + 2);
}

TEST(MeshPlanForms, ATensorRankHoldsChapter10sSlice) {
  for (int t : {1, 2, 3, 4, 6, 8, 12, 64, 192}) {
    EXPECT_EQ(tensor_slice_floats(t),
              static_cast<std::int64_t>(TensorSliceLayout(t, 0).size())) << "t = " << t;
    const std::int64_t columns = 384 / t;
    EXPECT_EQ(static_cast<std::int64_t>(TensorSplit::activation_floats(
                  TensorMode::kTensorParallel, t, kBatch, static_cast<std::size_t>(columns))),
              2 * kBatch * columns + kBatch + 2);
  }
  EXPECT_EQ(tensor_slice_floats(1), static_cast<std::int64_t>(model::kNumParameters));
}

struct Row {
  MeshConfig config;
  std::int64_t parameters, gradients, optimizer_state, communication, other;
  std::int64_t wire_data, wire_tensor, wire_pipeline;
};

// The forms by hand, Ψ = 1,068,298 (4 bytes a float). The rows of 1-D meshes are the
// numbers chapters 8 and 10 printed at batch 2; the composed rows follow the same rules:
// the tensor slice P = 109,450 + 958,848/t, ZeRO's shard ceil(P/dp), g and f over every
// image once per data replica, a cut's activations and gradient once per replica and rank.
// Beside a pipeline, the tensor ring (g and f, sized for f's pool2 gradient of one
// micro-batch) is on the stage holding local3 and local4 alone: the stages before it run
// whole on every tensor rank and sum nothing (PlanMatchesRun's 1x2x4, whose largest
// communication is such a stage's, holds it to the run).
TEST(MeshPlanForms, OnPipelineOnlyTheStageHoldingTheSplitHasATensorRing) {
  const auto k = static_cast<std::size_t>(MemoryCategory::kCommunication);
  const MeshPlan split = make_mesh_plan(mesh(1, 2, 2, 0, 1, 8));
  const MeshPlan whole = make_mesh_plan(mesh(1, 1, 2, 0, 1, 8));
  EXPECT_EQ(split.per_stage[0][k], whole.per_stage[0][k]);  // conv1-norm1: no ring
  EXPECT_EQ(split.per_stage[1][k], whole.per_stage[1][k] + 4 * 8 * 2304 / 2);  // conv2..: f's half
}

TEST(MeshPlanForms, TheTableOfForms) {
  constexpr std::int64_t psi = 1068298;
  const std::int64_t iterator = 2 * kBatch * (4 * 1728 + 4);
  const std::vector<Row> rows = {
      // dp: the all-reduce's ring buffer ceil(Ψ/N); ZeRO shards one more category per stage.
      {mesh(2, 1, 1, 0), 4 * psi, 4 * psi, 4 * psi, 4 * 534149, iterator, 4 * 2 * psi, 0, 0},
      {mesh(4, 1, 1, 1), 4 * psi, 4 * psi, 4 * 267075, 4 * 267075, iterator, 4 * 6 * psi, 0, 0},
      {mesh(4, 1, 1, 2), 4 * psi, 4 * (267075 + 885120), 4 * 267075, 4 * 267075, iterator,
       4 * 6 * psi, 0, 0},
      {mesh(2, 1, 1, 3), 4 * (534149 + 987584), 4 * (534149 + psi), 4 * 534149, 4 * 534149,
       iterator, 4 * (3 * psi - 4864), 0, 0},
      {mesh(2, 1, 1, 1, 1, kBatch, model::Optimizer::kAdam), 4 * psi, 4 * psi, 12 * 534149,
       4 * 534149, iterator, 4 * 2 * psi, 0, 0},
      // tp: the slice; the ring sized for f's b x 2304; nothing but the shared batch.
      {mesh(1, 2, 1, 0), 4 * 588874, 4 * 588874, 4 * 588874, 4 * 2304, 0, 0,
       4 * 2 * kBatch * 2496, 0},
      // pp (batch 8, m 2; stage 0 conv1-norm1): whole buffers, a second gradient buffer,
      // the mailboxes of norm1's output, the images on stage 0.
      {mesh(1, 1, 2, 0, 2, 8), 4 * psi, 8 * psi, 4 * psi, 4 * 8 * 9216, 4 * 8 * 1728, 0, 0,
       2 * 4 * 8 * 9216},
      // and with Adam: the moving averages whole, the two moments of the range a stage
      // updates alone (stage 1's: all but conv1's 4,864).
      {mesh(1, 1, 2, 0, 2, 8, model::Optimizer::kAdam), 4 * psi, 8 * psi,
       4 * psi + 8 * (psi - 4864), 4 * 8 * 9216, 4 * 8 * 1728, 0, 0, 2 * 4 * 8 * 9216},
      // the hybrid, 2 towers: the replicated ring's chunk and all rows of pool2 over 2;
      // gathers and scatters of 2 x b rows each way, the replicated all-reduce.
      {hybrid_mesh(2), 4 * 588874, 4 * 588874, 4 * 588874, 4 * (54725 + kBatch * 2304), 0, 0,
       4 * (2 * 2 * kBatch * 2496 + 2 * 109450), 0},
      // composed: 2 x 2 x 1 at ZeRO-1: the slice sharded, g and f in each replica.
      {mesh(2, 2, 1, 1), 4 * 588874, 4 * 588874, 4 * 294437, 4 * (294437 + 2304), 0,
       2 * 4 * 2 * 588874, 2 * 4 * 2 * kBatch * 2496, 0},
  };
  for (const Row& row : rows) {
    const MeshPlan plan = make_mesh_plan(row.config);
    const std::string shape = std::to_string(row.config.dp) + "x" + std::to_string(row.config.tp) +
                              "x" + std::to_string(row.config.pp) + " zero " +
                              std::to_string(row.config.zero);
    EXPECT_EQ(planned(plan, MemoryCategory::kParameters), row.parameters) << shape;
    EXPECT_EQ(planned(plan, MemoryCategory::kGradients), row.gradients) << shape;
    EXPECT_EQ(planned(plan, MemoryCategory::kOptimizerState), row.optimizer_state) << shape;
    EXPECT_EQ(planned(plan, MemoryCategory::kCommunication), row.communication) << shape;
    EXPECT_EQ(planned(plan, MemoryCategory::kOther), row.other) << shape;
    EXPECT_EQ(planned(plan, MemoryCategory::kWorkspace), 0) << shape;
    EXPECT_EQ(plan.wire_data, row.wire_data) << shape;
    EXPECT_EQ(plan.wire_tensor, row.wire_tensor) << shape;
    EXPECT_EQ(plan.wire_pipeline, row.wire_pipeline) << shape;
  }
}

TEST(MeshPlanForms, TheBubbleAndTheNumericsClass) {
  EXPECT_DOUBLE_EQ(make_mesh_plan(mesh(1, 1, 4, 0, 8, 32)).bubble, 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(make_mesh_plan(mesh(2, 1, 2, 0, 4, 8)).bubble, 1.0 / 5.0);
  EXPECT_EQ(make_mesh_plan(mesh(8, 1, 1, 3)).bubble, 0.0);
  EXPECT_EQ(make_mesh_plan(mesh(8, 1, 1, 3)).numerics, NumericsClass::kBitIdentical);
  EXPECT_EQ(make_mesh_plan(mesh(1, 1, 4, 0, 4, 8)).numerics, NumericsClass::kBitIdentical);
  EXPECT_EQ(make_mesh_plan(mesh(2, 4, 1, 0)).numerics, NumericsClass::kWithinBound);
  // A pipeline beside tensor parallelism: chapter 10's step cut between processes (one
  // micro-batch, one replica: 10_tensor's bits, chapter11_run_test), else no bound yet.
  const MeshPlan cut = make_mesh_plan(mesh(1, 2, 2, 0, 1, 8));
  EXPECT_EQ(cut.numerics, NumericsClass::kWithinBound);
  EXPECT_NE(cut.numerics_reference.find("10_tensor --collectives ring bit for bit"), std::string::npos);
  const MeshPlan accumulating = make_mesh_plan(mesh(1, 2, 2, 0, 2, 8));
  EXPECT_EQ(accumulating.numerics, NumericsClass::kWithinBound);
  EXPECT_NE(accumulating.numerics_reference.find("no bound is stated"), std::string::npos);
  // Data x pipeline: bit for bit with two replicas (a + b); with three or more each
  // stage's ring adds in another order than chapter 4's whole-buffer ring.
  EXPECT_EQ(make_mesh_plan(mesh(2, 1, 2, 0, 2, 8)).numerics, NumericsClass::kBitIdentical);
  EXPECT_EQ(make_mesh_plan(mesh(3, 1, 2, 0, 2, 8)).numerics, NumericsClass::kWithinBound);
  EXPECT_EQ(make_mesh_plan(mesh(4, 1, 2, 0, 2, 8, model::Optimizer::kAdam)).numerics,
            NumericsClass::kWithinBound);
  // 11_mesh's composed run holds data x tensor x pipeline at ZeRO-0 with every optimizer
  // (a pipeline beside tensor parallelism with local3 to softmax_linear on one stage),
  // ZeRO-1 beside tensor or pipeline parallelism or both, ZeRO-2 beside tensor
  // parallelism, and every ZeRO stage on data parallelism alone (chapter11_run_test);
  // nothing runs a pipeline that cuts local3 from local4 beside --tp.
  EXPECT_TRUE(make_mesh_plan(mesh(2, 2, 1, 0)).held_by_run);
  EXPECT_TRUE(make_mesh_plan(mesh(2, 1, 2, 0, 2, 8)).held_by_run);
  EXPECT_TRUE(make_mesh_plan(mesh(1, 2, 1, 0, 1, kBatch, model::Optimizer::kAdam)).held_by_run);
  EXPECT_TRUE(make_mesh_plan(mesh(2, 1, 2, 0, 2, 8, model::Optimizer::kMomentum)).held_by_run);
  EXPECT_TRUE(make_mesh_plan(mesh(4, 1, 1, 2, 1, kBatch, model::Optimizer::kAdam)).held_by_run);
  EXPECT_TRUE(make_mesh_plan(mesh(2, 2, 1, 2)).held_by_run);
  EXPECT_EQ(make_mesh_plan(mesh(2, 2, 1, 0)).numerics, NumericsClass::kWithinBound);
  EXPECT_TRUE(make_mesh_plan(mesh(2, 2, 2, 0, 2, 8)).held_by_run);
  EXPECT_TRUE(make_mesh_plan(mesh(1, 2, 4, 0, 2, 8, model::Optimizer::kAdam)).held_by_run);
  EXPECT_FALSE(make_mesh_plan(mesh(1, 2, 5, 0, 2, 8)).held_by_run);
  EXPECT_TRUE(split_layers_on_one_stage(4));
  EXPECT_FALSE(split_layers_on_one_stage(5));
  EXPECT_TRUE(make_mesh_plan(mesh(2, 2, 1, 1)).held_by_run);
  EXPECT_TRUE(make_mesh_plan(mesh(2, 1, 2, 1, 2, 8)).held_by_run);
  EXPECT_TRUE(make_mesh_plan(mesh(2, 2, 2, 1, 2, 8)).held_by_run);
  EXPECT_FALSE(make_mesh_plan(mesh(1, 2, 5, 1, 2, 8)).held_by_run);
  // ZeRO-1 beside another dimension keeps ZeRO-0's numerics class: the same bits.
  EXPECT_EQ(make_mesh_plan(mesh(3, 1, 2, 1, 2, 8)).numerics, NumericsClass::kWithinBound);
  EXPECT_EQ(make_mesh_plan(mesh(2, 1, 2, 1, 2, 8)).numerics, NumericsClass::kBitIdentical);
}

// ZeRO-1 on a pipeline shards each stage's range over the replicas, not the whole model:
// a stage keeps the moving averages and the optimizer's state of ceil(range / dp)
// variables, and a stage without variables keeps none.
TEST(MeshPlanForms, ZeroOneOnAPipelineShardsEachStagesRange) {
  const auto stage_state = [](const MeshPlan& plan, int s) {
    return plan.per_stage[static_cast<std::size_t>(s)]
                         [static_cast<std::size_t>(MemoryCategory::kOptimizerState)];
  };
  const MeshPlan adam = make_mesh_plan(mesh(3, 1, 4, 1, 2, 8, model::Optimizer::kAdam));
  const std::vector<StageLayers> split = default_split(4);
  for (int s = 0; s < 4; ++s) {
    const auto range = static_cast<std::int64_t>(stage_parameters(split[static_cast<std::size_t>(s)]).count);
    EXPECT_EQ(stage_state(adam, s), 4 * 3 * ((range + 2) / 3)) << "stage " << s;
  }
  EXPECT_EQ(stage_state(adam, 1), 0) << "chapter 9's most even split of 4 has a stage of norms";
}

// ZeRO-2 beside tensor parallelism is ZeRO-1's update with the shard's gradients kept
// apart: the same parameters, optimizer state, activations, rings and wire, and the
// gradients the slice's whole buffer (chapter 10's backward writes it) plus the shard,
// ceil(P/dp) on the largest replica: more than ZeRO-1 at the peak, and a run holds it.
TEST(MeshPlanForms, ZeroTwoBesideTensorKeepsTheShardBesideTheWholeSlice) {
  for (const MeshConfig& two : {mesh(2, 2, 1, 2), mesh(3, 2, 1, 2, 1, kBatch, model::Optimizer::kAdam),
                                mesh(1, 4, 1, 2)}) {
    MeshConfig one_config = two;
    one_config.zero = 1;
    const MeshPlan plan = make_mesh_plan(two), one = make_mesh_plan(one_config);
    const std::int64_t p = tensor_slice_floats(two.tp);
    const std::int64_t shard = (p + two.dp - 1) / two.dp;
    EXPECT_EQ(planned(plan, MemoryCategory::kGradients), 4 * (p + shard)) << two.dp << "x" << two.tp;
    EXPECT_EQ(planned(one, MemoryCategory::kGradients), 4 * p);
    for (MemoryCategory category : {MemoryCategory::kParameters, MemoryCategory::kOptimizerState,
                                    MemoryCategory::kActivations, MemoryCategory::kCommunication,
                                    MemoryCategory::kOther}) {
      EXPECT_EQ(planned(plan, category), planned(one, category)) << category_name(category);
    }
    EXPECT_EQ(plan.wire_data, one.wire_data);
    EXPECT_EQ(plan.wire_tensor, one.wire_tensor);
    EXPECT_TRUE(plan.held_by_run);
    EXPECT_NE(plan.numerics_reference.find("--zero 2 is --zero 1's bits"), std::string::npos)
        << plan.numerics_reference;
  }
}

TEST(MeshPlanForms, WhatThePlanRefusesSaysWhatToChange) {
  struct Refused {
    MeshConfig config;
    const char* says;
  };
  const std::vector<Refused> refused = {
      {mesh(1, 5, 1, 0), "--tp 5 does not divide"},
      {mesh(1, 128, 1, 0), "--tp 128 does not divide"},  // divides 384, not 192
      {mesh(1, 1, 10, 0), "use at most 9"},
      {mesh(1, 1, 2, 2, 2, 8), "--zero 2 is planned for data parallelism and beside --tp, not "
                               "beside a pipeline"},
      {mesh(2, 2, 2, 2, 2, 8), "use --zero 1 with --pp above 1"},
      {mesh(1, 1, 2, 3, 2, 8), "--zero 3 is planned for data parallelism alone"},
      {mesh(2, 2, 1, 3), "use --zero 2 beside --tp (with --pp 1)"},
      {mesh(2, 1, 1, 0, 2, 8), "with --pp 1 there is none"},
      {mesh(1, 1, 2, 0, 3, 8), "not a multiple of --micro-batches 3"},
      {mesh(0, 1, 1, 0), "at least 1"},
  };
  MeshConfig hybrid = mesh(2, 2, 1, 0);
  hybrid.hybrid = true;
  EXPECT_NE(mesh_problem(hybrid).find("--hybrid is chapter 10's split on its own"),
            std::string::npos);
  for (const Refused& r : refused) {
    const std::string problem = mesh_problem(r.config);
    EXPECT_NE(problem.find(r.says), std::string::npos) << problem;
    EXPECT_THROW(make_mesh_plan(r.config), std::invalid_argument) << r.says;
  }
  MeshConfig interleaved = mesh(1, 1, 2, 0, 2, 8);
  interleaved.schedule = PipelineSchedule::kInterleaved;
  EXPECT_NE(mesh_problem(interleaved).find("gpipe or 1f1b"), std::string::npos);
  EXPECT_EQ(mesh_problem(mesh(2, 2, 2, 1, 2, 8)), "");
}

// Every factorization dp x tp x pp = N: 8 has ten (ordered triples), 6 has nine, and with
// 16 one is refused: tp 16 divides 192, pp 16 exceeds the 9 layers (1x1x16).
TEST(MeshPlanForms, EveryShapeOfNDevices) {
  EXPECT_EQ(mesh_shapes(8, MeshConfig{}).size(), 10u);
  EXPECT_EQ(mesh_shapes(6, MeshConfig{}).size(), 9u);
  const auto sixteen = mesh_shapes(16, MeshConfig{});
  EXPECT_EQ(sixteen.size(), 14u);
  for (const MeshConfig& c : sixteen) {
    EXPECT_EQ(c.devices(), 16);
    EXPECT_LE(c.pp, 9);
  }
}

// --- 11_mesh --plan --------------------------------------------------------------------

TEST(MeshProgram, PlanPrintsThePlansKeysForAComposedMesh) {
  const ProgramRun r = run("11_mesh", "--plan --dp 2 --tp 2 --pp 2 --micro-batches 2 "
                                      "--batch-size 8 --zero 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const MeshPlan plan = make_mesh_plan(mesh(2, 2, 2, 1, 2, 8));
  EXPECT_EQ(r.last("mesh"), "2x2x2");
  EXPECT_EQ(key(r, "devices"), 8);
  for (MemoryCategory category : {MemoryCategory::kParameters, MemoryCategory::kGradients,
                                  MemoryCategory::kOptimizerState, MemoryCategory::kActivations,
                                  MemoryCategory::kCommunication, MemoryCategory::kOther}) {
    const std::string name(category_name(category));
    EXPECT_EQ(key(r, "plan_" + name + "_bytes"), planned(plan, category)) << name;
  }
  EXPECT_EQ(key(r, "plan_wire_data_bytes_per_step"), plan.wire_data);
  EXPECT_EQ(key(r, "plan_wire_tensor_bytes_per_step"), plan.wire_tensor);
  EXPECT_EQ(key(r, "plan_wire_pipeline_bytes_per_step"), plan.wire_pipeline);
  EXPECT_EQ(key(r, "plan_wire_bytes_per_step"), plan.total_wire());
  EXPECT_EQ(r.last("plan_bubble"), "0.333");
  EXPECT_EQ(r.last("numerics"), "within_bound");
  EXPECT_EQ(r.last("held_by_run"), "yes");  // the composed run holds it, not --plan
  EXPECT_EQ(r.last("measured"), "no");
}

TEST(MeshProgram, ShapesListsEveryMeshOfNDevices) {
  const ProgramRun r = run("11_mesh", "--plan --shapes 8");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(key(r, "shapes"), 10);
  EXPECT_NE(r.output.find("2x2x2"), std::string::npos) << r.output;
}

TEST(MeshProgram, WhatCannotBePlannedOrRunIsAUsageError) {
  struct Refused {
    const char* args;
    const char* says;
  };
  for (const Refused& c : std::vector<Refused>{
#if TOWERS_TEST_RANKS
           // Without --plan, the composed run: one process here (no mpirun), and what it
           // cannot run yet is refused before it starts, saying what runs today.
           {"--dp 2", "start it with mpirun -n 2"},
           {"--pp 2", "start it with mpirun -n 2"},
           {"--pp 2 --tp 2", "start it with mpirun -n 4"},
           {"--pp 5 --tp 2", "--pp 5 cuts between local3 and softmax_linear, and beside tensor "
                             "parallelism (--tp 2) chapter 10's split needs local3, local4 and "
                             "softmax_linear on one stage: that mesh is planned, not run"},
           // ZeRO-1 beside tensor or pipeline parallelism or both runs: only the job's
           // size is wrong.
           {"--pp 2 --tp 2 --zero 1", "start it with mpirun -n 4"},
           {"--tp 2 --zero 1", "start it with mpirun -n 2"},
           {"--pp 2 --zero 2", "--zero 2 is planned for data parallelism and beside --tp, not "
                               "beside a pipeline"},
           {"--tp 2 --zero 2", "start it with mpirun -n 2"},  // ZeRO-2 beside --tp runs
           {"--pp 2 --micro-batches 2 --zero 1", "start it with mpirun -n 2"},
#else
           // A build without MPI has no composed run: only --plan.
           {"--dp 2", "this build has no MPI"},
#endif
           {"--shapes 8", "add --plan"},
           {"--tp 5", "--tp 5 does not divide"},
           {"--plan --tp 5", "--tp 5 does not divide"},
           {"--plan --pp 10", "use at most 9"},
           {"--plan --tp 2 --zero 3", "--zero 3 is planned for data parallelism alone"},
           {"--plan --pp 2 --micro-batches 3 --batch-size 8", "not a multiple"},
           {"--plan --shapes 8 --dp 2", "drop --dp, --tp and --pp"},
           {"--plan --schedule interleaved", "interleaved"},
           {"--plan --hybrid --tp 2 --dp 2", "--hybrid is chapter 10's split on its own"},
       }) {
    const ProgramRun r = run("11_mesh", c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST(MeshProgram, HelpSaysWhatRunsToday) {
  const ProgramRun r = run("11_mesh", "--help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("runs the composed mesh (data x tensor x pipeline, --pp at most 4 "
                          "beside --tp; SGD, momentum or Adam; ZeRO-1 beside --tp or --pp, "
                          "ZeRO-2 beside --tp, ZeRO-1 to 3 with data parallelism alone; host "
                          "backend)"),
            std::string::npos) << r.output;
}

}  // namespace
}  // namespace towers

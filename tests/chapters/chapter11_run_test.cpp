// SPDX-License-Identifier: MIT
// Chapter 11's composed run, `mpirun -n N 11_mesh --dp a --tp b`, held to the plan and to
// the chapters it composes.
//
// PlanMatchesRun: for N = 1, 2, 4 and 8 and every mesh of N devices the plan accepts that
// runs today (data x tensor x pipeline; one with GPipe), and twenty meshes with
// momentum or Adam on every kind of rank, ZeRO-1 to 3 on data parallelism alone,
// ZeRO-1 beside tensor and pipeline parallelism and beside both, and ZeRO-2 beside tensor
// parallelism (and 2x1x4 at ZeRO-1 among the eight),
// two steps at a tiny batch: every category of the largest device's memory
// ledger equals the plan to the byte, and the bytes the rings sent per step on each
// dimension (counted where they are sent, summed over the ranks) equal the plan's exactly.
//
// The numerics class: tensor parallelism alone is chapter 10's 10_tensor with the ring, bit
// for bit (the same sums in the same order, now between processes); data parallelism
// alone is chapter 5's 05_ranks with the ring, bit for bit, and with ZeRO-1 to 3 or
// momentum or Adam chapter 8's 08_sharded, bit for bit; ZeRO-1 beside tensor or pipeline
// parallelism is the same mesh at ZeRO-0, bit for bit, and ZeRO-2 beside tensor
// parallelism the same mesh at ZeRO-1; the pipeline alone chapter 9's
// 09_pipeline --model cifar, bit for bit, and with momentum or Adam (one micro-batch)
// 08_sharded's one tower; data x tensor stays within chapter 10's bound of chapter 5 (the
// tensor ranks cut local4's sums, as in chapter 10); data x pipeline is the plan's
// reference, chapter 4's towers each accumulating m micro-batches, bit for bit: with m = 1
// that is chapter 5's ring itself, and for m > 1, which no program runs, the test writes
// that reference out (towers_each_accumulating). A pipeline beside tensor parallelism with
// one micro-batch and one replica is 10_tensor with the ring, bit for bit (its stages cut
// chapter 10's step between processes). Tensor parallelism with momentum or Adam has no
// reference (no chapter trains the split with them): the plan says so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "chapter10_helpers.hpp"
#include "exact_resume.hpp"  // bytes_of
#include "data/preprocess.hpp"
#include "harness/input_queue.hpp"
#include "harness/micro_batches.hpp"
#include "harness/training_run.hpp"
#include "model/network.hpp"
#include "model/ops.hpp"
#include "model/optimizer.hpp"
#include "model/optimizer_kind.hpp"
#include "model/parameters.hpp"
#include "parallel/mesh_plan.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "program.hpp"
#include "ranks.hpp"
#include "runtime/runtime.hpp"

namespace towers {
namespace {

using chapter10_tests::gamma;
using chapter10_tests::same_bits;
using testing::ProgramRun;
using testing::RankRun;
using testing::run;
using testing::run_ranks;
using testing::saved_params;

constexpr int kBatch = 2;
const std::string kSmall = "--steps 2 --log-every 1 --batch-size " + std::to_string(kBatch) + " ";

long long key(const ProgramRun& r, const std::string& name) { return std::llround(r.number(name)); }

std::filesystem::path temp_file(const std::string& name) {
  return testing::temp_file("towers-ch11", name);
}

std::string mesh_args(int dp, int tp) {
  return "--dp " + std::to_string(dp) + " --tp " + std::to_string(tp) + " ";
}

// --- PlanMatchesRun ---------------------------------------------------------------------

// A pipeline cuts the batch of 2 into 2 micro-batches of one image.
constexpr int kMicroBatches = 2;

struct Shape {
  int dp, tp, pp;
  const char* schedule = "1f1b";
  int zero = 0;
  const char* optimizer = "sgd";
};
void PrintTo(const Shape& s, std::ostream* out) {
  *out << s.dp << "x" << s.tp << "x" << s.pp << " " << s.schedule << " zero " << s.zero << " "
       << s.optimizer;
}

// Every mesh of n devices the plan accepts that runs today (the plan says a run holds it):
// data x tensor x pipeline, a pipeline beside --tp of at most 4 stages.
std::vector<Shape> runnable_shapes(int n) {
  std::vector<Shape> shapes;
  for (const MeshConfig& c :
       mesh_shapes(n, MeshConfig{.micro_batches = kMicroBatches, .batch = kBatch})) {
    if (make_mesh_plan(c).held_by_run) shapes.push_back({c.dp, c.tp, c.pp});
  }
  return shapes;
}

std::vector<Shape> shapes_of_1_2_4() {
  std::vector<Shape> all;
  for (int n : {1, 2, 4}) {
    for (const Shape& s : runnable_shapes(n)) all.push_back(s);
  }
  // GPipe stashes every micro-batch where 1F1B stashes p - s: other activation slots.
  all.push_back({2, 1, 2, "gpipe"});
  return all;
}

MeshConfig config_of(const Shape& s) {
  MeshConfig c{.dp = s.dp, .tp = s.tp, .pp = s.pp, .zero = s.zero,
               .micro_batches = s.pp > 1 ? kMicroBatches : 1, .batch = kBatch,
               .optimizer = model::parse_optimizer(s.optimizer)};
  c.schedule = *parse_pipeline_schedule(s.schedule);
  return c;
}

std::string args_of(const Shape& s) {
  std::string args = "--dp " + std::to_string(s.dp) + " --tp " + std::to_string(s.tp) +
                     " --pp " + std::to_string(s.pp) + " ";
  if (s.pp > 1) {
    args += "--micro-batches " + std::to_string(kMicroBatches) + " --schedule " + s.schedule + " ";
  }
  return args + "--zero " + std::to_string(s.zero) + " --optimizer " + s.optimizer + " ";
}

std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  const Shape& s = info.param;
  return "dp" + std::to_string(s.dp) + "_tp" + std::to_string(s.tp) + "_pp" +
         std::to_string(s.pp) + (s.pp > 1 ? "_" + std::string(s.schedule) : "") +
         (s.zero > 0 ? "_zero" + std::to_string(s.zero) : "") +
         (std::string(s.optimizer) != "sgd" ? "_" + std::string(s.optimizer) : "");
}

// The run `r` of mesh `s` (args_of(s) + kSmall, maybe more flags that change nothing it
// holds or sends, such as --save-params) held to the plan of `s`.
void expect_run_holds_plan(const Shape& s, const RankRun& r) {
  const MeshPlan plan = make_mesh_plan(config_of(s));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int c = 0; c < kMemoryCategoryCount; ++c) {
    const auto category = static_cast<MemoryCategory>(c);
    const std::string name(category_name(category));
    // The host backend has no workspace: no key (0), and the plan says 0.
    EXPECT_EQ(key(r, "peak_" + name + "_bytes"), plan.device[static_cast<std::size_t>(c)])
        << name << "\n" << r.output;
  }
  EXPECT_EQ(key(r, "wire_data_bytes_per_step"), plan.wire_data) << r.output;
  EXPECT_EQ(key(r, "wire_tensor_bytes_per_step"), plan.wire_tensor) << r.output;
  EXPECT_EQ(key(r, "wire_pipeline_bytes_per_step"), plan.wire_pipeline) << r.output;
  // The program says so itself, and the plan says a run holds it.
  EXPECT_EQ(r.last("plan_matches"), "yes");
  // Every rank entered the same collectives: no rank waited for another at the end
  // (a stage without variables once skipped the data ring, and the others waited 10 s).
  EXPECT_EQ(r.output.find("progress board gave up"), std::string::npos) << r.output;
  EXPECT_EQ(r.last("measured"), "yes");
  EXPECT_EQ(r.last("held_by_run"), "yes");
  EXPECT_TRUE(plan.held_by_run);
  // A mesh with a dimension above 1 sends something on it: the equalities above are not 0 = 0.
  if (s.dp > 1) {
    EXPECT_GT(plan.wire_data, 0);
  }
  if (s.tp > 1) {
    EXPECT_GT(plan.wire_tensor, 0);
  }
  if (s.pp > 1) {  // and the bubble was read from the trace
    EXPECT_GT(plan.wire_pipeline, 0);
    EXPECT_GT(r.number("bubble_share"), 0.0) << r.output;
    EXPECT_LT(r.number("bubble_share"), 1.0) << r.output;
  }
}

class PlanMatchesRun : public ::testing::TestWithParam<Shape> {};

TEST_P(PlanMatchesRun, EveryCategoryToTheByteAndEveryDimensionsWire) {
  const Shape s = GetParam();
  expect_run_holds_plan(s, run_ranks("11_mesh", s.dp * s.tp * s.pp, args_of(s) + kSmall));
}

INSTANTIATE_TEST_SUITE_P(OneTwoAndFourDevices, PlanMatchesRun,
                         ::testing::ValuesIn(shapes_of_1_2_4()),
                         shape_name);

// The optimizers that keep state, on every kind of rank (ZeRO-0; a pipeline beside --tp
// too), ZeRO-1 to 3 on data parallelism alone, every optimizer, ZeRO-1 beside the
// tensor split (each rank's slice sharded over the replicas) and beside a pipeline (each
// stage's range sharded), and ZeRO-2 beside the tensor split (its gradients too); three replicas shard Ψ unevenly (one element more for the
// first shard), the largest device's shard then the plan's ceil(Ψ/3) (ZeRO-1 with three
// replicas beside tensor and pipeline parallelism:
// MeshBits.ZeroOneBesideTensorAndPipelineIsZeroZeroBitForBit holds its runs to the plan
// too).
std::vector<Shape> optimizer_and_zero_shapes() {
  return {
      {2, 1, 1, "1f1b", 0, "momentum"}, {2, 1, 1, "1f1b", 0, "adam"},
      {1, 2, 1, "1f1b", 0, "adam"},     {2, 2, 1, "1f1b", 0, "momentum"},
      {1, 1, 3, "1f1b", 0, "adam"},     {2, 1, 2, "gpipe", 0, "momentum"},
      {1, 1, 1, "1f1b", 1, "sgd"},      {2, 1, 1, "1f1b", 1, "sgd"},
      {3, 1, 1, "1f1b", 1, "momentum"}, {4, 1, 1, "1f1b", 1, "adam"},
      {2, 1, 1, "1f1b", 2, "adam"},     {3, 1, 1, "1f1b", 2, "sgd"},
      {2, 1, 1, "1f1b", 3, "momentum"}, {3, 1, 1, "1f1b", 3, "adam"},
      {1, 2, 2, "gpipe", 0, "adam"},  // a pipeline beside --tp: the split stage's own state
      {1, 2, 1, "1f1b", 1, "sgd"},      {2, 2, 1, "1f1b", 1, "adam"},
      {2, 1, 2, "gpipe", 1, "momentum"},
      // ZeRO-2 beside the tensor split: the slice's gradient shard beside its whole buffer.
      {2, 2, 1, "1f1b", 2, "sgd"},      {1, 4, 1, "1f1b", 2, "adam"},
      // ZeRO-1 beside both: one replica, each stage's range of the slice its own shard
      // (2x2x2: MeshBits.ZeroOneBesideTensorAndPipelineIsZeroZeroBitForBit).
      {1, 2, 2, "gpipe", 1, "momentum"},
  };
}

INSTANTIATE_TEST_SUITE_P(OptimizersAndZero, PlanMatchesRun,
                         ::testing::ValuesIn(optimizer_and_zero_shapes()), shape_name);

// Every mesh of eight that runs at ZeRO-0, and 2x1x4 at ZeRO-1: its second stage has no
// variables and marks both of the data ring's halves on the progress board (with one
// mark the other ranks waited 10 s at the end, and this test saw it). Eight ranks on the
// CI's two cores: about 10-15 s a shape; `-E EightDevices` leaves them out.
std::vector<Shape> eight_device_shapes() {
  std::vector<Shape> shapes = runnable_shapes(8);
  shapes.push_back({2, 1, 4, "1f1b", 1, "sgd"});
  return shapes;
}
INSTANTIATE_TEST_SUITE_P(EightDevices, PlanMatchesRun, ::testing::ValuesIn(eight_device_shapes()),
                         shape_name);

TEST(PlanMatchesRunShapes, AreEveryMeshThatRunsOfOneTwoFourAndEight) {
  // dp x tp x pp: 1x1x1; 2x1x1, 1x2x1, 1x1x2; 4x1x1, 2x2x1, 2x1x2, 1x4x1, 1x2x2, 1x1x4
  // and 2x1x2 with GPipe: what the first instantiation runs. Twenty with optimizers
  // and ZeRO; and 2x1x4 at ZeRO-1 among the eight.
  EXPECT_EQ(optimizer_and_zero_shapes().size(), 21u);
  EXPECT_EQ(eight_device_shapes().size(), 11u);
  EXPECT_EQ(shapes_of_1_2_4().size(), 11u);
  // 8x1x1, 4x2x1, 4x1x2, 2x4x1, 2x2x2, 2x1x4, 1x8x1, 1x4x2, 1x2x4, 1x1x8: all ten.
  EXPECT_EQ(runnable_shapes(8).size(), 10u);
}

// --- The numerics class -----------------------------------------------------------------

// A mesh of `ranks` processes (11_mesh with `mesh`) and chapter 5 with `replicas` ranks
// (05_ranks --allreduce ring), each run at kSmall and saving its parameters: whether
// they are the same bits, the mesh's numerics class beside it.
struct AgainstChapter5 {
  bool same = false;
  std::string numerics;
};
AgainstChapter5 mesh_against_chapter5(int ranks, const std::string& mesh, int replicas,
                                      const std::string& name) {
  const auto mine = temp_file(name), ch5 = temp_file("ch5-" + name);
  const RankRun a = run_ranks("11_mesh", ranks, mesh + kSmall + "--save-params " + mine.string());
  const RankRun b = run_ranks("05_ranks", replicas, kSmall + "--backend host --allreduce ring "
                                                             "--save-params " + ch5.string());
  EXPECT_EQ(a.exit_code, 0) << a.output;
  EXPECT_EQ(b.exit_code, 0) << b.output;
  if (a.exit_code != 0 || b.exit_code != 0) return {};
  return {same_bits(saved_params(mine), saved_params(ch5)), a.last("numerics")};
}

TEST(MeshBits, TensorAloneIsChapter10sRingBitForBit) {
  for (int t : {2, 3}) {  // 3: the ring adds three parts, and the order decides the bits
    const auto mesh = temp_file("tp" + std::to_string(t)), ch10 = temp_file("ch10-" + std::to_string(t));
    const RankRun a = run_ranks("11_mesh", t, mesh_args(1, t) + kSmall + "--save-params " + mesh.string());
    const ProgramRun b = run("10_tensor", kSmall + "--backend host --collectives ring --devices " +
                                              std::to_string(t) + " --tp " + std::to_string(t) +
                                              " --save-params " + ch10.string());
    ASSERT_EQ(a.exit_code, 0) << a.output;
    ASSERT_EQ(b.exit_code, 0) << b.output;
    EXPECT_EQ(a.last("numerics"), "within_bound");  // of chapter 4; of chapter 10's ring: bits
    EXPECT_TRUE(same_bits(saved_params(mesh), saved_params(ch10))) << "t = " << t;
  }
}

// A pipeline beside tensor parallelism, one micro-batch, one replica: chapter 10's step
// cut into stages, the convolutions run whole on every tensor rank and the split stage's
// g and f over the tensor ring, so 10_tensor's bits. The checkpoint, put together from
// every stage's and tensor rank's part (parameters, moving averages, input position), is
// 10_tensor's file byte for byte. Two stages (the split on the second) and four (the
// split on the fourth, two stages before it of pooling and norms, one without variables).
TEST(MeshBits, PipelineByTensorIsChapter10sRingBitForBit) {
  const std::filesystem::path ch10 = temp_file("ch10-pp-checkpoints");
  const ProgramRun b = run("10_tensor", kSmall + "--backend host --collectives ring --devices 2 "
                                                 "--tp 2 --checkpoint-dir " + ch10.string());
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const std::string expected = testing::bytes_of(ch10 / "model.ckpt-2");
  ASSERT_FALSE(expected.empty());
  for (int pp : {2, 4}) {
    const std::filesystem::path mesh = temp_file("tp2-pp" + std::to_string(pp) + "-checkpoints");
    const RankRun a = run_ranks("11_mesh", 2 * pp, "--tp 2 --pp " + std::to_string(pp) +
                                                      " --micro-batches 1 " + kSmall +
                                                      "--checkpoint-dir " + mesh.string());
    ASSERT_EQ(a.exit_code, 0) << a.output;
    EXPECT_EQ(a.last("numerics"), "within_bound");  // of chapter 4; of chapter 10's ring: bits
    EXPECT_TRUE(testing::bytes_of(mesh / "model.ckpt-2") == expected) << "pp = " << pp;
  }
}

TEST(MeshBits, DataAloneIsChapter5sRingBitForBit) {
  const AgainstChapter5 run = mesh_against_chapter5(2, mesh_args(2, 1), 2, "dp2");
  EXPECT_EQ(run.numerics, "bit_identical");
  EXPECT_TRUE(run.same);
}

// Chapter 8's rank, one per process: every ZeRO stage with each optimizer is 08_sharded's
// towers bit for bit (the ring's halves over MPI, rank r owning the shard chapter 8's tower
// r owns, the same rules element by element; ZeRO-3's layers gathered exactly). Three replicas: the chunks are uneven and
// each is added in its own order.
TEST(MeshBits, DataAloneWithZeroAndOptimizersIsChapter8sBitForBit) {
  struct Case {
    int zero;
    const char* optimizer;
  };
  std::vector<std::vector<float>> params;
  for (const Case& c : {Case{0, "adam"}, Case{1, "momentum"}, Case{2, "adam"}, Case{1, "sgd"},
                        Case{3, "momentum"}}) {
    const std::string what = "--zero " + std::to_string(c.zero) + " --optimizer " + c.optimizer + " ";
    const std::string name = "z" + std::to_string(c.zero) + "-" + c.optimizer;
    const auto mesh = temp_file("dp3-" + name), ch8 = temp_file("ch8-" + name);
    const RankRun a = run_ranks("11_mesh", 3, mesh_args(3, 1) + kSmall + what + "--save-params " +
                                                  mesh.string());
    const ProgramRun b = run("08_sharded", kSmall + "--backend host --devices 3 " + what +
                                               "--save-params " + ch8.string());
    ASSERT_EQ(a.exit_code, 0) << a.output;
    ASSERT_EQ(b.exit_code, 0) << b.output;
    EXPECT_EQ(a.last("numerics"), "bit_identical");
    params.push_back(saved_params(mesh));
    EXPECT_TRUE(same_bits(params.back(), saved_params(ch8))) << what;
  }
  // The optimizer is the one asked for: Adam's steps are not SGD's.
  EXPECT_FALSE(same_bits(params[2], params[3]));
}

// Mesh `s` (a ZeRO stage above 0) and the same mesh at ZeRO stage `reference`, each run at
// kSmall saving its parameters: the same bits, and the run trained (its parameters are
// not the fresh ones). The run of `s` is held to its plan as PlanMatchesRun holds the
// others.
void expect_same_bits_as_stage(const Shape& s, int reference) {
  Shape other = s;
  other.zero = reference;
  std::vector<std::vector<float>> params;
  for (const Shape& run : {other, s}) {
    const auto file = temp_file("bits-" + shape_name({run, 0}));
    const RankRun r = run_ranks("11_mesh", run.dp * run.tp * run.pp,
                                args_of(run) + kSmall + "--save-params " + file.string());
    if (run.zero == s.zero) expect_run_holds_plan(run, r);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    params.push_back(saved_params(file));
  }
  EXPECT_TRUE(same_bits(params[0], params[1])) << shape_name({s, 0});
  // And the run trained: the update is not lost on either side.
  EXPECT_FALSE(same_bits(params[1], fresh_state(1).params)) << shape_name({s, 0});
}

// ZeRO-1 beside the tensor split and beside a pipeline: the same mesh at ZeRO-0, bit for
// bit. The update moved between the data ring's two halves, cut into the chunks the
// ZeRO-0 ring cuts from the same buffer (a tensor rank's slice, a stage's range), and
// every rule is element-wise. Three replicas, so that each chunk is added in its own
// order: halves cut from another buffer (the whole model, say) would round otherwise.
// Each ZeRO-1 run is held to its plan as PlanMatchesRun holds the others (three replicas:
// the uneven shards of a slice and of a stage's range). 1x1x4: one replica, no data ring
// and its shard the whole range, and a stage of norms, which keeps no state at all.
// 2x2x2: beside both, each stage's range of its tensor slice sharded over two replicas
// (its checkpoint, moving averages and Adam's moments included, is ZeRO-0's file:
// chapter11_resume_test's MeshCheckpoint.ZeroOneBesideBothIsZeroZerosFileAndResumes).
TEST(MeshBits, ZeroOneBesideTensorAndPipelineIsZeroZeroBitForBit) {
  for (const Shape& one : {Shape{3, 2, 1, "1f1b", 1, "adam"}, Shape{3, 1, 2, "1f1b", 1, "momentum"},
                           Shape{1, 1, 4, "1f1b", 1, "adam"}, Shape{2, 2, 2, "1f1b", 1, "adam"}}) {
    expect_same_bits_as_stage(one, 0);
  }
}

// ZeRO-2 beside the tensor split: ZeRO-1's update, reading a copy of the shard's mean
// (the gradient shard it keeps), so ZeRO-1's bits. Three replicas, Adam: uneven shards,
// and a rule with state, whose update would show a shard read from the wrong place.
TEST(MeshBits, ZeroTwoBesideTensorIsZeroOneBitForBit) {
  expect_same_bits_as_stage({3, 2, 1, "1f1b", 2, "adam"}, 1);
}

// A pipeline of one micro-batch computes chapter 1's gradients (chapter 9), and each stage
// updates its range by chapter 8's rule, its state kept for that range: 08_sharded's one
// tower with the same optimizer, bit for bit.
TEST(MeshBits, PipelineWithAnOptimizerIsChapter8sOneTowerBitForBit) {
  for (const char* optimizer : {"momentum", "adam"}) {
    const auto mesh = temp_file(std::string("pp3-") + optimizer);
    const auto ch8 = temp_file(std::string("ch8-one-") + optimizer);
    const std::string what = std::string("--optimizer ") + optimizer + " ";
    const RankRun a = run_ranks("11_mesh", 3, "--pp 3 --micro-batches 1 " + kSmall + what +
                                                  "--save-params " + mesh.string());
    const ProgramRun b = run("08_sharded", kSmall + "--backend host --devices 1 --zero 0 " + what +
                                               "--save-params " + ch8.string());
    ASSERT_EQ(a.exit_code, 0) << a.output;
    ASSERT_EQ(b.exit_code, 0) << b.output;
    EXPECT_EQ(a.last("numerics"), "bit_identical");
    EXPECT_TRUE(same_bits(saved_params(mesh), saved_params(ch8))) << optimizer;
  }
}

TEST(MeshBits, PipelineAloneIsChapter9sBitForBit) {
  // Chapter 9's stages in one process, and so 01_single_gpu --accumulate 2 (chapter 9's
  // tests hold that): the same sums in the same order, the messages only moved.
  for (const char* schedule : {"1f1b", "gpipe"}) {
    const auto mesh = temp_file(std::string("pp3-") + schedule);
    const auto ch9 = temp_file(std::string("ch9-") + schedule);
    const std::string args = std::string("--micro-batches 2 --batch-size 4 --steps 2 --schedule ") +
                             schedule + " --save-params ";
    const RankRun a = run_ranks("11_mesh", 3, "--pp 3 " + args + mesh.string());
    const ProgramRun b = run("09_pipeline", "--model cifar --backend host --devices 3 --stages 3 " +
                                                args + ch9.string());
    ASSERT_EQ(a.exit_code, 0) << a.output;
    ASSERT_EQ(b.exit_code, 0) << b.output;
    EXPECT_EQ(a.last("numerics"), "bit_identical");
    EXPECT_TRUE(same_bits(saved_params(mesh), saved_params(ch9))) << schedule;
  }
}

// Data x tensor against chapter 5 on as many replicas, one step from the same state: each
// replica's tensor ranks cut local4's and f's sums as chapter 10's do, and the data ring
// then averages the replicas' gradients as chapter 5's does. So every parameter stays
// within chapter 10's bound of chapter 5's:
//   |p_mesh - p_ch5| <= (gamma(383) + gamma(384/t + t - 2)) max|update| + ulp(p).
TEST(MeshBits, DataByTensorStaysWithinChapter10sBoundOfChapter5) {
  std::vector<float> start(model::kNumParameters);
  model::initialize_parameters(1, start.data());  // --seed 1, both programs' start
  const std::string one_step = "--steps 1 --batch-size " + std::to_string(kBatch) + " ";
  const auto ch5 = temp_file("ch5-step");
  const RankRun b = run_ranks("05_ranks", 2, one_step + "--backend host --allreduce ring "
                                                        "--save-params " + ch5.string());
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const std::vector<float> p5 = saved_params(ch5);
  const double largest_update = testing::largest_difference(start, p5);
  ASSERT_GT(largest_update, 0.0);
  for (int t : {2}) {
    const auto mesh = temp_file("dp2-tp" + std::to_string(t));
    const RankRun a = run_ranks("11_mesh", 2 * t, mesh_args(2, t) + one_step + "--save-params " +
                                                       mesh.string());
    ASSERT_EQ(a.exit_code, 0) << a.output;
    EXPECT_EQ(a.last("numerics"), "within_bound");
    const std::vector<float> pm = saved_params(mesh);
    ASSERT_EQ(pm.size(), p5.size());
    const double eps = gamma(383) + gamma(384.0 / t + t - 2);
    std::size_t differing = 0, beyond = 0;
    for (std::size_t i = 0; i < pm.size(); ++i) {
      const double difference = std::fabs(double(pm[i]) - p5[i]);
      const double ulp = std::max(std::nextafter(std::fabs(pm[i]), INFINITY) - std::fabs(pm[i]),
                                  std::nextafter(std::fabs(p5[i]), INFINITY) - std::fabs(p5[i]));
      differing += difference > 0;
      beyond += !(difference <= eps * largest_update + ulp);
    }
    EXPECT_GT(differing, 0u) << "the sums are cut: some rounding must differ";
    EXPECT_EQ(beyond, 0u) << "dp 2 x tp " << t;
  }
}

// The plan's reference for data x pipeline, which no program runs: chapter 4's two towers
// (replicas), each accumulating m micro-batches as 01_single_gpu --accumulate m does
// (forward_backward_accumulated: the micro-batches' gradients summed in order, then / m),
// the two means averaged as chapter 5's ring averages two ranks' (each element a + b, then
// times 1/2), and one SGD update. Replica r trains on the r-th slice of each global batch
// of 2 x `batch` images, as 11_mesh's replica r (and chapter 5's rank r) does. Returns the
// parameters after `steps` steps from --seed `seed`, on one simulated device.
std::vector<float> towers_each_accumulating(int micro_batches, int batch, int steps,
                                            std::uint64_t seed) {
  constexpr int kReplicas = 2;  // the ring's sum of two is a + b: one order only
  ops::set_host_op_threads(1);  // as each of 11_mesh's simulated devices
  auto runtime = Runtime::create({.backend = BackendChoice::kHost, .devices = 1});
  Device& device = runtime->device(0);
  auto stream = device.create_stream();
  const data::Dataset train = load_training_set("");
  InputQueue queue(train, kReplicas * batch, seed);
  model::Network network(device, batch / micro_batches);
  const std::size_t count = model::kNumParameters;
  Buffer params = device.allocate(count * sizeof(float));
  Buffer micro_grads = device.allocate(count * sizeof(float));
  std::vector<Buffer> grads;
  for (int r = 0; r < kReplicas; ++r) grads.push_back(device.allocate(count * sizeof(float)));
  Buffer images = device.allocate(sizeof(float) * kReplicas * batch * data::kCropValues);
  Buffer labels = device.allocate(sizeof(std::int32_t) * kReplicas * batch);
  Buffer losses = device.allocate_pinned(sizeof(float) * model::kLossCount * micro_batches);
  const model::TrainingState state = fresh_state(seed);
  std::copy(state.params.begin(), state.params.end(), params.as<float>());  // host memory
  const std::int64_t steps_per_decay = model::decay_steps(batch, kReplicas);
  for (int step = 0; step < steps; ++step) {
    queue.dequeue(images.as<float>(), labels.as<std::int32_t>());
    for (int r = 0; r < kReplicas; ++r) {
      forward_backward_accumulated(*stream, network, params.as<float>(),
                                   images.as<float>() + r * batch * data::kCropValues,
                                   labels.as<int>() + r * batch, micro_batches,
                                   micro_grads.as<float>(), grads[r].as<float>(),
                                   losses.as<float>());
      stream->synchronize();
    }
    float* mean = grads[0].as<float>();
    const float* other = grads[1].as<float>();
    for (std::size_t i = 0; i < count; ++i) mean[i] = (mean[i] + other[i]) * 0.5f;
    model::apply_gradients(*stream, model::learning_rate(step, steps_per_decay), mean,
                           params.as<float>());
    stream->synchronize();
  }
  return {params.as<float>(), params.as<float>() + count};
}

TEST(MeshBits, DataByPipelineIsChapter5sRingWithOneMicroBatchBitForBit) {
  // m = 1: each replica's pipeline is one forward and backward, chapter 5's rank's.
  const AgainstChapter5 run =
      mesh_against_chapter5(4, "--dp 2 --pp 2 --micro-batches 1 ", 2, "dp2-pp2-m1");
  EXPECT_EQ(run.numerics, "bit_identical");
  EXPECT_TRUE(run.same);
}

// Three replicas or more: each stage's data ring cuts its chunks from the stage's own
// range, chapter 5's from the whole buffer, so an element's three gradients are added in
// another order and the bits differ. The plan says so (within_bound, a prediction); this
// is what showed it claiming bit_identical before.
TEST(MeshBits, DataByPipelineWithThreeReplicasAddsInAnotherOrderThanChapter5) {
  const AgainstChapter5 run =
      mesh_against_chapter5(6, "--dp 3 --pp 2 --micro-batches 1 ", 3, "dp3-pp2-m1");
  ASSERT_FALSE(run.numerics.empty());  // both ran
  EXPECT_EQ(run.numerics, "within_bound");
  EXPECT_FALSE(run.same) << "the same bits: the plan could say bit_identical for three replicas again";
}

TEST(MeshBits, DataByPipelineIsTowersEachAccumulatingBitForBit) {
  // m = 2 on each of 2 replicas of 2 stages, both schedules: the replicas' means of their
  // micro-batches, then averaged, are the reference's bits. Chapter 1 accumulating all four
  // micro-batches in one sum is not: ((a + b) + c) + d rounds otherwise than (a + b) + (c + d),
  // so the order the mesh adds in is what the test holds.
  const std::string args = "--dp 2 --pp 2 --micro-batches 2 --batch-size 2 --steps 2 ";
  const std::vector<float> reference = towers_each_accumulating(2, 2, 2, 1);
  for (const char* schedule : {"1f1b", "gpipe"}) {
    const auto mesh = temp_file(std::string("dp2-pp2-") + schedule);
    const RankRun a = run_ranks("11_mesh", 4, args + "--schedule " + schedule +
                                                  " --save-params " + mesh.string());
    ASSERT_EQ(a.exit_code, 0) << a.output;
    EXPECT_EQ(a.last("numerics"), "bit_identical");
    EXPECT_TRUE(same_bits(saved_params(mesh), reference)) << schedule;
  }
  const auto ch1 = temp_file("ch1-accumulate4");
  const ProgramRun c = run("01_single_gpu", "--backend host --accumulate 4 --batch-size 4 "
                                            "--steps 2 --save-params " + ch1.string());
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_FALSE(same_bits(saved_params(ch1), reference))
      << "one sum of all four micro-batches gave the replicas' bits: the test cannot tell the "
         "orders apart";
}

}  // namespace
}  // namespace towers

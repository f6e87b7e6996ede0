// SPDX-License-Identifier: MIT
// Chapter 11's composed run, `mpirun -n N 11_mesh --dp a --tp b`, held to the plan and to
// the chapters it composes.
//
// PlanMatchesRun: for N = 1, 2 and 4 and every data x tensor mesh of N devices the plan
// accepts, two steps at a tiny batch: every category of the largest device's memory
// ledger equals the plan to the byte, and the bytes the rings sent per step on each
// dimension (counted where they are sent, summed over the ranks) equal the plan's exactly.
//
// The numerics class: tensor parallelism alone is chapter 10's 10_tensor with the ring, bit
// for bit (the same sums in the same order, now between processes); data parallelism
// alone is chapter 5's 05_ranks with the ring, bit for bit; both at once stay within
// chapter 10's bound of chapter 5 (the tensor ranks cut local4's sums, as in chapter 10).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "chapter10_helpers.hpp"
#include "model/parameters.hpp"
#include "parallel/mesh_plan.hpp"
#include "program.hpp"
#include "ranks.hpp"

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

struct Shape {
  int dp, tp;
};
void PrintTo(const Shape& s, std::ostream* out) { *out << s.dp << "x" << s.tp; }

// Every data x tensor mesh of n devices the plan accepts (pp = 1: what runs today).
std::vector<Shape> runnable_shapes(int n) {
  std::vector<Shape> shapes;
  for (const MeshConfig& c : mesh_shapes(n, MeshConfig{.batch = kBatch})) {
    if (c.pp == 1) shapes.push_back({c.dp, c.tp});
  }
  return shapes;
}

std::vector<Shape> shapes_of_1_2_4() {
  std::vector<Shape> all;
  for (int n : {1, 2, 4}) {
    for (const Shape& s : runnable_shapes(n)) all.push_back(s);
  }
  return all;
}

class PlanMatchesRun : public ::testing::TestWithParam<Shape> {};

TEST_P(PlanMatchesRun, EveryCategoryToTheByteAndEveryDimensionsWire) {
  const Shape s = GetParam();
  const MeshPlan plan = make_mesh_plan(MeshConfig{.dp = s.dp, .tp = s.tp, .batch = kBatch});
  const RankRun r = run_ranks("11_mesh", s.dp * s.tp, mesh_args(s.dp, s.tp) + kSmall);
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
}

INSTANTIATE_TEST_SUITE_P(OneTwoAndFourDevices, PlanMatchesRun,
                         ::testing::ValuesIn(shapes_of_1_2_4()),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return "dp" + std::to_string(info.param.dp) + "_tp" +
                                  std::to_string(info.param.tp);
                         });

TEST(PlanMatchesRunShapes, AreEveryDataByTensorMeshOfOneTwoAndFour) {
  // 1x1; 2x1, 1x2; 4x1, 2x2, 1x4: what the instantiation above runs.
  EXPECT_EQ(shapes_of_1_2_4().size(), 6u);
}

// --- The numerics class -----------------------------------------------------------------

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

TEST(MeshBits, DataAloneIsChapter5sRingBitForBit) {
  const auto mesh = temp_file("dp2"), ch5 = temp_file("ch5-2");
  const RankRun a = run_ranks("11_mesh", 2, mesh_args(2, 1) + kSmall + "--save-params " + mesh.string());
  const RankRun b = run_ranks("05_ranks", 2, kSmall + "--backend host --allreduce ring --save-params " +
                                                 ch5.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(a.last("numerics"), "bit_identical");
  EXPECT_TRUE(same_bits(saved_params(mesh), saved_params(ch5)));
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

}  // namespace
}  // namespace towers

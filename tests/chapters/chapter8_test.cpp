// SPDX-License-Identifier: MIT
// Chapter 8's claims, on simulated devices: ZeRO-1, -2 and -3 end with chapter 4's
// parameters and --zero 0's moving averages bit for bit; every device's peak bytes per
// category equal ZeRO's closed form (with the transient terms stages 2 and 3 hold), up to
// one element of a shard; the bytes on the wire are the all-reduce's for stages 1-2 and
// half as much again, less conv1's second gather, for stage 3; activations do not shrink
// with N.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "model/gradient_layers.hpp"
#include "model/parameters.hpp"
#include "parallel/layer_gather.hpp"
#include "parallel/zero_memory.hpp"
#include "program.hpp"

namespace towers {
namespace {

using testing::run;
using testing::saved_params;

const std::string kSmall = "--backend host --batch-size 8 --log-every 1 ";
// Three steps for the math (the moving averages' decay changes every step); the ledger's
// peaks are reached in the first step, so the memory tests run one.
const std::string kMath = kSmall + "--steps 3 ";
const std::string kOneStep = kSmall + "--steps 1 ";
constexpr double kPsi = static_cast<double>(model::kNumParameters);

std::filesystem::path temp_file(const std::string& name) {
  return testing::temp_file("towers-ch8", name);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class ShardedTowers : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Devices, ShardedTowers, ::testing::Values(1, 2, 4, 8));

// Chapter 4's update on whole copies and ZeRO's update of each shard apply the same
// float operations to the same numbers; ZeRO-2 reads its gradient shard from a copy of the
// same bits, ZeRO-3 runs the same ops on gathered copies of the same parameters. The bits
// must agree, parameters and averages.
TEST_P(ShardedTowers, EveryStageIsChapterFoursMathBitForBit) {
  const int n = GetParam();
  const std::string devices = "--devices " + std::to_string(n) + " ";
  const auto ch4 = temp_file("ch4-" + std::to_string(n)), z0 = temp_file("z0-" + std::to_string(n));
  auto a = run("04_nccl_iterator", kMath + devices + "--allreduce ring --save-params " + ch4.string());
  auto b = run("08_sharded", kMath + devices + "--zero 0 --save-params " + z0.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_TRUE(same_bits(saved_params(ch4), saved_params(z0))) << "--zero 0 vs chapter 4, " << n;
  for (int stage : {1, 2, 3}) {
    const auto z = temp_file("z" + std::to_string(stage) + "-" + std::to_string(n));
    auto c = run("08_sharded", kMath + devices + "--zero " + std::to_string(stage) +
                                   " --save-params " + z.string());
    ASSERT_EQ(c.exit_code, 0) << c.output;
    EXPECT_TRUE(same_bits(saved_params(ch4), saved_params(z)))
        << "ZeRO-" << stage << " vs chapter 4, " << n << " devices";
    EXPECT_EQ(b.last("averages_hash"), c.last("averages_hash"))
        << "ZeRO-" << stage << ": the sharded moving averages, gathered, must be --zero 0's";
    EXPECT_EQ(c.last("zero"), std::to_string(stage));
    // ZeRO-3 keeps no copies of the parameters, so there are none to compare.
    EXPECT_EQ(c.last("param_checks"), stage == 3 ? "0" : b.last("param_checks"));
    EXPECT_EQ(c.last("collectives"),
              stage == 3 ? "reduce_scatter+layer_gathers" : "reduce_scatter+all_gather");
  }
}

// The ledger against the formula. A whole category is exactly 4Ψ bytes. A sharded one is
// one shard, plus what the stage holds for a moment: at stages 2-3 the whole gradient
// buffer of the step (B = Ψ), at stage 3 the gathered layers (W = the largest two
// consecutive layers, LayerGather::window_elements()). The shards differ by at most one
// element, so the largest device's peak lies in [formula, formula + 4): one float.
// Bytes on the wire, in the same one-step runs, as the ring and the layer gathers count
// them (every copy between two devices). Stages 0-2: one reduce-scatter and one all-gather
// of Ψ floats, each tower receiving the N-1 shards it does not own: 2(N-1)Ψ x 4 bytes per
// step for all towers, the all-reduce's 2(N-1)/N Ψ x 4 per tower. Stage 3 gathers every layer for the
// forward pass and again for the backward pass, except conv1, whose weights the backward
// pass never reads (no gradient for the images): 1.5 times that, less (N-1) x conv1's.
TEST_P(ShardedTowers, PeakBytesAndBytesOnTheWireEqualTheFormulas) {
  const int n = GetParam();
  const double all_reduce = 2.0 * (n - 1) * kPsi * 4;
  const double conv1 = static_cast<double>(model::gradient_layers().back().count);
  EXPECT_EQ(model::gradient_layers().back().name, "conv1");
  for (int stage : {0, 1, 2, 3}) {
    auto r = run("08_sharded", kOneStep + "--devices " + std::to_string(n) + " --zero " +
                                   std::to_string(stage));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ZeroSizes sizes{kPsi, n, 4, 4, 4};
    sizes.gradient_bucket = stage >= 2 ? kPsi : 0;
    sizes.parameter_window = stage == 3 ? static_cast<double>(LayerGather::window_elements()) : 0;
    const ZeroBytes formula = zero_bytes_per_device(stage, sizes);
    const std::pair<const char*, double> categories[] = {
        {"peak_parameters_bytes", formula.parameters},
        {"peak_gradients_bytes", formula.gradients},
        {"peak_optimizer_state_bytes", formula.optimizer_state}};
    for (const auto& [key, bytes] : categories) {
      const double measured = r.number(key);
      EXPECT_GE(measured, bytes) << key << ", stage " << stage << ", " << n << " devices";
      EXPECT_LT(measured, bytes + 4) << key << ", stage " << stage << ", " << n << " devices";
    }
    EXPECT_NEAR(r.number("formula_parameters_bytes"), formula.parameters, 0.05);
    EXPECT_NEAR(r.number("formula_gradients_bytes"), formula.gradients, 0.05);
    EXPECT_NEAR(r.number("formula_optimizer_state_bytes"), formula.optimizer_state, 0.05);
    EXPECT_NEAR(r.number("formula_total_bytes"), formula.total(), 0.05);
    // The table has one row per device.
    EXPECT_NE(r.output.find("dev" + std::to_string(n - 1) + " "), std::string::npos) << r.output;
    const double wire = stage < 3 ? all_reduce : 1.5 * all_reduce - (n - 1) * conv1 * 4;
    EXPECT_EQ(r.number("wire_bytes"), wire) << "stage " << stage << ", " << n << " devices";
    EXPECT_EQ(r.number("formula_wire_bytes_per_step"), wire) << "stage " << stage;
  }
}

// Where sharding stops helping: each tower keeps its own batch's activations whatever N
// is, so the activation line is the same for 1 and 4 devices while the optimizer state
// falls to a quarter.
TEST(ShardedTowers, ActivationsDoNotShrinkWithMoreDevices) {
  auto one = run("08_sharded", kOneStep + "--devices 1 --zero 1");
  auto four = run("08_sharded", kOneStep + "--devices 4 --zero 1");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(four.exit_code, 0) << four.output;
  EXPECT_GT(one.number("peak_activations_bytes"), 0.0);
  EXPECT_EQ(one.number("peak_activations_bytes"), four.number("peak_activations_bytes"))
      << "activations depend on the batch per tower, not on how many towers share the state";
  EXPECT_LT(four.number("peak_optimizer_state_bytes") * 3.9, one.number("peak_optimizer_state_bytes"));
}

// The tutorial runs 2 towers on one GPU where it has one: each tower still owns its
// copies, so the device holds two towers' worth, and the formula row says so.
TEST(ShardedTowers, TowersSharingADeviceAddUpInItsLedger) {
  auto r = run("08_sharded", kOneStep + "--devices 1 --towers-per-device 2 --zero 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.number("peak_parameters_bytes"), 2 * 4 * kPsi) << r.output;
  const double state = r.number("peak_optimizer_state_bytes");
  EXPECT_GE(state, 4 * kPsi);  // two shards of half: all of it, up to the odd element
  EXPECT_LT(state, 4 * kPsi + 8);
}

TEST(ShardedTowers, PrintsThePapersTableFromTheSameFormula) {
  auto r = run("08_sharded", kOneStep + "--devices 2 --zero 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("120.0 / 31.4 / 16.6 / 1.9 GB"), std::string::npos) << r.output;
}

// At ZeRO-3 two towers on one device each keep their own parameter shard and gather from
// each other without a link: the same bits, and no byte on the wire.
TEST(ShardedTowers, ZeroThreeTowersSharingADeviceGatherWithoutTheWire) {
  const auto z0 = temp_file("shared-z0"), z3 = temp_file("shared-z3");
  const std::string args = kMath + "--devices 1 --towers-per-device 2 ";
  auto a = run("08_sharded", args + "--zero 0 --save-params " + z0.string());
  auto b = run("08_sharded", args + "--zero 3 --save-params " + z3.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_TRUE(same_bits(saved_params(z0), saved_params(z3)));
  EXPECT_EQ(b.number("wire_bytes"), 0.0);
}

TEST(ShardedTowers, WhatIsNotAStageIsRefusedBeforeTraining) {
  for (const char* stage : {"4", "7", "-1"}) {
    auto r = run("08_sharded", kOneStep + "--devices 2 --zero " + stage);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("not a ZeRO stage"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("step 0"), std::string::npos) << "refused before the first step";
  }
  // ZeRO-3 holds no copies of the parameters: nothing to perturb.
  auto r = run("08_sharded", kOneStep + "--devices 2 --zero 3 --inject-divergence 0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--zero 3"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("step 0"), std::string::npos) << "refused before the first step";
}

}  // namespace
}  // namespace towers

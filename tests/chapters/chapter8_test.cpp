// SPDX-License-Identifier: MIT
// Chapter 8's claims, on simulated devices: ZeRO-1 ends with chapter 4's parameters and
// --zero 0's moving averages bit for bit; every device's peak bytes per category equal
// ZeRO's closed form, up to one element of a shard; activations do not shrink with N.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "../data/temp_dir.hpp"
#include "exact_resume.hpp"
#include "model/checkpoint.hpp"
#include "model/parameters.hpp"
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

// Chapter 4's update on whole copies and ZeRO-1's update of each shard apply the same
// float operations to the same numbers: the bits must agree, parameters and averages.
TEST_P(ShardedTowers, ZeroOneIsChapterFoursMathBitForBit) {
  const int n = GetParam();
  const std::string devices = "--devices " + std::to_string(n) + " ";
  const auto ch4 = temp_file("ch4-" + std::to_string(n)), z0 = temp_file("z0-" + std::to_string(n)),
             z1 = temp_file("z1-" + std::to_string(n));
  auto a = run("04_nccl_iterator", kMath + devices + "--allreduce ring --save-params " + ch4.string());
  auto b = run("08_sharded", kMath + devices + "--zero 0 --save-params " + z0.string());
  auto c = run("08_sharded", kMath + devices + "--zero 1 --save-params " + z1.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_TRUE(same_bits(saved_params(ch4), saved_params(z1))) << "ZeRO-1 vs chapter 4, " << n;
  EXPECT_TRUE(same_bits(saved_params(z0), saved_params(z1))) << "ZeRO-1 vs --zero 0, " << n;
  EXPECT_EQ(b.last("averages_hash"), c.last("averages_hash"))
      << "the sharded moving averages, gathered, must be --zero 0's";
  EXPECT_EQ(c.last("param_checks"), b.last("param_checks"));
  EXPECT_EQ(c.last("zero"), "1");
  EXPECT_EQ(c.last("collectives"), "reduce_scatter+all_gather");
}

// The ledger against the formula. Parameters and gradients are whole at stage 1: exactly
// 4Ψ bytes. The moving averages are one shard: the shards differ by at most one element,
// so the largest device's peak lies in [4Ψ/N, 4Ψ/N + 4): the bound is one float.
TEST_P(ShardedTowers, PeakBytesPerCategoryEqualTheFormulaUpToOneElementPerShard) {
  const int n = GetParam();
  for (int stage : {0, 1}) {
    auto r = run("08_sharded", kOneStep + "--devices " + std::to_string(n) + " --zero " +
                                   std::to_string(stage));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const ZeroBytes formula = zero_bytes_per_device(stage, ZeroSizes{kPsi, n, 4, 4, 4});
    EXPECT_EQ(r.number("peak_parameters_bytes"), formula.parameters) << r.output;
    EXPECT_EQ(r.number("peak_gradients_bytes"), formula.gradients) << r.output;
    const double state = r.number("peak_optimizer_state_bytes");
    EXPECT_GE(state, formula.optimizer_state) << "stage " << stage << ", " << n << " devices";
    EXPECT_LT(state, formula.optimizer_state + 4) << "stage " << stage << ", " << n << " devices";
    EXPECT_NEAR(r.number("formula_optimizer_state_bytes"), formula.optimizer_state, 0.05);
    EXPECT_NEAR(r.number("formula_total_bytes"), formula.total(), 0.05);
    // The table has one row per device.
    EXPECT_NE(r.output.find("dev" + std::to_string(n - 1) + " "), std::string::npos) << r.output;
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

// Chapter 1's checkpoints with the moving averages sharded: a checkpoint holds them whole,
// put together from the towers' shards, so --zero 1's is --zero 0's byte for byte (same
// math), --eval evaluates the same averages, and a resumed --zero 1 run gives each tower
// its shard back and ends where one never stopped does. Three towers: 1,068,298 does not
// divide by 3, so the shards differ in size.
TEST(ShardedTowers, CheckpointsHoldTheShardsPutTogetherAndResumeExactly) {
  data::testing::TempDir dir;
  std::string flags = testing::tiny_set(dir.path());
  flags.replace(flags.find("--devices 2"), 11, "--devices 3");
  const auto ckpt = [&](const std::string& name) { return (dir.path() / name).string(); };
  auto z0 = run("08_sharded", flags + "--zero 0 --steps 4 --eval --checkpoint-dir " + ckpt("z0"));
  auto z1 = run("08_sharded", flags + "--zero 1 --steps 4 --eval --checkpoint-dir " + ckpt("z1"));
  ASSERT_EQ(z0.exit_code, 0) << z0.output;
  ASSERT_EQ(z1.exit_code, 0) << z1.output;
  const std::string name = model::checkpoint_name(4);
  const std::string expected = testing::bytes_of(dir.path() / "z0" / name);
  ASSERT_FALSE(expected.empty()) << z0.output;
  EXPECT_TRUE(expected == testing::bytes_of(dir.path() / "z1" / name))
      << "--zero 1's checkpoint differs from --zero 0's: the shards were not put together";
  EXPECT_EQ(z0.last("precision_at_1"), z1.last("precision_at_1"));
  EXPECT_EQ(z0.last("averages_hash"), z1.last("averages_hash"));

  // 2 steps, then 2 more resumed, against the 4 straight steps above.
  auto a = run("08_sharded", flags + "--zero 1 --steps 2 --checkpoint-dir " + ckpt("split"));
  ASSERT_EQ(a.exit_code, 0) << a.output;
  auto b = run("08_sharded", flags + "--zero 1 --steps 2 --resume --checkpoint-dir " + ckpt("split"));
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("resumed from"), std::string::npos) << b.output;
  EXPECT_EQ(b.last("global_step"), "4") << b.output;
  EXPECT_EQ(b.last("averages_hash"), z1.last("averages_hash")) << b.output;
  EXPECT_TRUE(expected == testing::bytes_of(dir.path() / "split" / name))
      << "a resumed --zero 1 run ends with other bytes than one never stopped";
}

TEST(ShardedTowers, StagesNotYetBuiltAreRefusedBeforeTraining) {
  for (const char* stage : {"2", "3"}) {
    auto r = run("08_sharded", kOneStep + "--devices 2 --zero " + stage);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("not yet"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("step 0"), std::string::npos) << "refused before the first step";
  }
  auto bad = run("08_sharded", kOneStep + "--devices 2 --zero 7");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("not a ZeRO stage"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace towers

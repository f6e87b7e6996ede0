// SPDX-License-Identifier: MIT
// Chapter 8's claims, on simulated devices: ZeRO-1, -2 and -3 end with chapter 4's
// parameters and --zero 0's moving averages bit for bit; every device's peak bytes per
// category equal ZeRO's closed form (with the transient terms stages 2 and 3 hold), up to
// one element of a shard; the bytes on the wire are the all-reduce's for stages 1-2 and
// half as much again, less conv1's second gather, for stage 3; activations do not shrink
// with N. Checkpoints hold every tower's state put together, momentum's and Adam's too: a
// run killed and resumed ends as one never stopped, at every stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../data/temp_dir.hpp"
#include "exact_resume.hpp"
#include "model/checkpoint.hpp"
#include "model/gradient_layers.hpp"
#include "model/optimizer_kind.hpp"
#include "model/parameters.hpp"
#include "parallel/buckets.hpp"
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

// The gradients a tower holds whole for a moment at ZeRO `stage`: at stage 2 the largest
// of chapter 6's buckets for --bucket-mb `bucket_mb` (one bucket of whole layers at a
// time), at stage 3 the whole buffer of the step; none below.
double held_whole(int stage, double bucket_mb = 0) {
  if (stage < 2) return 0;
  if (stage == 3) return kPsi;
  std::size_t largest = 0;
  for (const Bucket& bucket : make_buckets(bucket_mb)) largest = std::max(largest, bucket.count);
  return static_cast<double>(largest);
}

// The ledger against the formula. A whole category is exactly 4Ψ bytes. A sharded one is
// one shard, plus what the stage holds for a moment: at stage 2 the largest gradient
// bucket, at stage 3 the whole gradient buffer of the step (B = Ψ) and the gathered
// layers (W = the largest two
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
    sizes.gradient_bucket = held_whole(stage);
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

// ZeRO-2 reduce-scatters each bucket of gradients as the backward pass finishes it, so a
// tower never holds the whole gradient: its peak is its shard plus the largest bucket
// (local3's 885,120 gradients with the default --bucket-mb 0, one bucket per layer), less
// than the shard plus Ψ that reducing the whole buffer after the backward pass holds.
// --bucket-mb 5 makes the whole model one bucket, and the peak is that again: the flag
// changes the ledger as the formula says, and neither changes the math. Three devices:
// Ψ does not divide by 3, so the largest device's shard is one element over Ψ/N.
TEST(ShardedTowers, ZeroTwoHoldsItsShardAndOneBucketNotTheWholeGradient) {
  const std::string args = kMath + "--devices 3 --zero 2 ";
  const double shard = kPsi / 3;
  auto buckets = run("08_sharded", args);
  auto one = run("08_sharded", args + "--bucket-mb 5");
  auto z1 = run("08_sharded", kMath + "--devices 3 --zero 1");
  ASSERT_EQ(buckets.exit_code, 0) << buckets.output;
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(z1.exit_code, 0) << z1.output;
  EXPECT_EQ(buckets.last("gradient_buckets"), "5");
  EXPECT_EQ(one.last("gradient_buckets"), "1");

  const double local3 = held_whole(2);
  EXPECT_EQ(local3, 885120.0) << "the largest layer, local3, is the largest bucket";
  const double peak = buckets.number("peak_gradients_bytes");
  EXPECT_GE(peak, 4 * (shard + local3));
  EXPECT_LT(peak, 4 * (shard + local3) + 4);
  EXPECT_LT(peak, 4 * (shard + kPsi)) << "the whole gradient buffer was held: " << buckets.output;
  EXPECT_NEAR(buckets.number("formula_gradient_bucket_bytes"), 4 * local3, 0.05);

  EXPECT_EQ(held_whole(2, 5), kPsi);
  const double whole = one.number("peak_gradients_bytes");
  EXPECT_GE(whole, 4 * (shard + kPsi));
  EXPECT_LT(whole, 4 * (shard + kPsi) + 4);
  EXPECT_NEAR(one.number("formula_gradient_bucket_bytes"), 4 * kPsi, 0.05);

  // Same adds in the same order, bucket by bucket or whole: ZeRO-1's bits.
  EXPECT_EQ(buckets.last("averages_hash"), z1.last("averages_hash"));
  EXPECT_EQ(one.last("averages_hash"), z1.last("averages_hash"));
  EXPECT_EQ(buckets.last("final_loss"), z1.last("final_loss"));
}

// ZeRO-3's gathers hidden behind compute, on a slow link, measured from the trace as
// chapter 6 measures overlap_comm: gather_overlap is the share of the layer gathers' time
// during which the same device ran a compute op (steps after the first).
//
// The threshold, from the link model (runtime/link_model.hpp): a peer copy of b bytes
// takes 8b/G ns at G Gb/s; a tower's own piece is a local copy, not slowed. At 10 Gb/s
// (10 GbE; PCIe 4.0 is 256) with 2 towers each gather pulls half a layer over the link:
//   conv1 (4,864 parameters) 7.8 us, conv2 (102,464) 164 us, local3 (885,120) 1,416 us,
//   local4 (73,920) 118 us, softmax_linear (1,930) 3.1 us.
// A step gathers every layer forward and all but conv1 again backward: 3,410 us of link
// time per device. A prefetched gather is hidden if the ops computing while it travels
// take longer than it. Counting only the gathers that no CPU core could out-compute (at
// 100 GFLOP/s, above one core's peak; batch 8): local3's forward gather beside conv2's
// forward (236 MFLOP: >= 2.4 ms against 1.4 ms), local4's beside local3's forward (14.2
// MFLOP: >= 142 us against 118 us), softmax_linear's beside local4's (1.2 MFLOP against 3.1
// us) and conv2's backward gather beside local3's input gradient and conv2's weight
// gradient (250 MFLOP against 164 us): 1,701 us, 49.9 % of the link time, hidden whatever
// the machine. The rest may show on a fast one: the step's first gathers can run while the
// tower waits for its batch, and the backward's local4 and local3 travel beside smaller
// products (softmax_linear's, local4's, and local3's weight gradient, 15 MFLOP). That
// model leaves out the own piece's local copy and a sleeping copy that wakes late. On a
// machine shared by other work a starved copy thread can stretch one gather by
// milliseconds while its tower waits (0.39 to 0.87 in six runs at a load of 9 on 2 cores).
// Since the host convolutions got faster (a step of this test ~37 ms) the towers' compute
// threads hold both cores more of the time: quiet runs give 0.50-0.63, and in a CI run
// beside another test the best of 3 was 0.368. So the test asks for 0.25 (five times
// the bound without prefetch), and, as chapter 4's input overlap, up to 3 runs must reach
// it once.
// Without prefetch (--gather-prefetch off) a gather starts when the compute stream needs
// its layer, and that stream waits for it: nothing computes beside it (under 0.05, as
// chapter 6's --overlap off), and all its link time is exposed, at least 3,410 us per step.
TEST(ShardedTowers, ZeroThreesPrefetchedGathersAreHiddenBehindCompute) {
  const std::string args = kSmall + "--steps 4 --devices 2 --zero 3 --link-gbps 10 ";
  // The link time of one step's gathers on one device, from the layer sizes: half of each
  // layer crosses the link, every layer forward, all but conv1 backward.
  double link_us = 0;
  for (const model::GradientLayer& layer : model::gradient_layers()) {
    const double half_bytes = static_cast<double>(layer.count) / 2 * 4;
    link_us += (layer.name == "conv1" ? 1 : 2) * 8 * half_bytes / 10e9 * 1e6;
  }
  EXPECT_NEAR(link_us, 3410, 1);

  auto on = run("08_sharded", args);
  ASSERT_EQ(on.exit_code, 0) << on.output;
  EXPECT_EQ(on.last("gather_prefetch"), "on") << on.output;
  std::string outputs = on.output;
  double hidden = on.number("gather_overlap");
  for (int retry = 0; retry < 2 && hidden < 0.25; ++retry) {
    auto again = run("08_sharded", args);
    ASSERT_EQ(again.exit_code, 0) << again.output;
    hidden = std::max(hidden, again.number("gather_overlap"));
    outputs += again.output;
  }
  EXPECT_GE(hidden, 0.25) << outputs;
  EXPECT_LE(hidden, 1.0) << outputs;

  auto off = run("08_sharded", args + "--gather-prefetch off");
  ASSERT_EQ(off.exit_code, 0) << off.output;
  EXPECT_EQ(off.last("gather_prefetch"), "off") << off.output;
  EXPECT_LT(off.number("gather_overlap"), 0.05) << off.output;
  EXPECT_GE(off.number("exposed_gather_ms"), link_us / 1000) << off.output;
  // Same math either way: the prefetch moves copies, not ops.
  EXPECT_EQ(on.last("averages_hash"), off.last("averages_hash"));
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

// The chapter's lesson, in the ledger: on this model ZeRO-3's peak model state is above
// ZeRO-1's until N = 27 (zero_memory_test.cpp derives where from the formula: it gathers
// conv2 and local3 at once, most of the model, and holds the whole gradient buffer during
// the step). On 26 and 27 devices every category of the largest device lies in
// [formula, formula + 4), so no buffer made before the step (as a per-device parameter
// copy made and freed unused once did, 4Ψ from N = 14 on) sets a peak above it, and the
// sum of the three peaks crosses where the formula's does. Batch 1: only model state is
// compared.
TEST(ShardedTowers, ZeroThreesPeakPassesBelowZeroOnesOnlyFromTwentySevenDevices) {
  const std::string one_image = "--backend host --batch-size 1 --steps 1 ";
  const char* keys[] = {"peak_parameters_bytes", "peak_gradients_bytes",
                        "peak_optimizer_state_bytes"};
  const char* formula_keys[] = {"formula_parameters_bytes", "formula_gradients_bytes",
                                "formula_optimizer_state_bytes"};
  for (int n : {26, 27}) {
    double model_state[4] = {};
    for (int stage : {1, 3}) {
      auto r = run("08_sharded", one_image + "--devices " + std::to_string(n) + " --zero " +
                                     std::to_string(stage));
      ASSERT_EQ(r.exit_code, 0) << r.output;
      for (int k = 0; k < 3; ++k) {
        const double measured = r.number(keys[k]), formula = r.number(formula_keys[k]);
        EXPECT_GE(measured, formula - 0.05) << keys[k] << ", ZeRO-" << stage << ", " << n;
        EXPECT_LT(measured, formula + 4) << keys[k] << ", ZeRO-" << stage << ", " << n
                                         << " devices: a buffer above the formula set the peak";
        model_state[stage] += measured;
      }
    }
    if (n == 26) {
      EXPECT_GT(model_state[3], model_state[1]) << "ZeRO-3 below ZeRO-1 already on 26 devices";
    } else {
      EXPECT_LT(model_state[3], model_state[1]) << "ZeRO-3 not below ZeRO-1 on 27 devices";
    }
  }
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

// The runtime's own workspaces (each stream's cuBLAS workspace, the kernel-stamp ring) are
// a ledger line on GPUs only: the host backend has none, so its table and summary keep the
// six categories they had (peak_other_bytes the last), with no workspace column or key.
TEST(ShardedTowers, TheHostLedgerHasNoWorkspaceLine) {
  auto r = run("08_sharded", kOneStep + "--devices 2 --zero 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("workspace"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" communication           other           total\n"),
            std::string::npos) << r.output;
  EXPECT_GE(r.number("peak_other_bytes"), 0.0);
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

// Chapter 1's checkpoints with the state sharded: a checkpoint holds the moving averages
// (and, with --zero 3, the parameters) whole, put together from the towers' shards, so
// --zero 1's, 2's and 3's are --zero 0's byte for byte (same math), --eval evaluates the
// same averages, and a resumed run gives each tower its shards back and ends where one
// never stopped does. Three towers: 1,068,298 does not divide by 3, so the shards differ
// in size.
TEST(ShardedTowers, CheckpointsHoldTheShardsPutTogetherAndResumeExactly) {
  data::testing::TempDir dir;
  std::string flags = testing::tiny_set(dir.path());
  flags.replace(flags.find("--devices 2"), 11, "--devices 3");
  const auto ckpt = [&](const std::string& name) { return (dir.path() / name).string(); };
  auto z0 = run("08_sharded", flags + "--zero 0 --steps 4 --eval --checkpoint-dir " + ckpt("z0"));
  ASSERT_EQ(z0.exit_code, 0) << z0.output;
  const std::string name = model::checkpoint_name(4);
  const std::string expected = testing::bytes_of(dir.path() / "z0" / name);
  ASSERT_FALSE(expected.empty()) << z0.output;
  for (const std::string stage : {"1", "2", "3"}) {
    const std::string zero = "--zero " + stage + " ";
    auto z = run("08_sharded", flags + zero + "--steps 4 --eval --checkpoint-dir " + ckpt("z" + stage));
    ASSERT_EQ(z.exit_code, 0) << z.output;
    EXPECT_TRUE(expected == testing::bytes_of(dir.path() / ("z" + stage) / name))
        << "--zero " << stage << "'s checkpoint differs from --zero 0's: the shards were not "
        << "put together";
    EXPECT_EQ(z0.last("precision_at_1"), z.last("precision_at_1")) << stage;
    EXPECT_EQ(z0.last("averages_hash"), z.last("averages_hash")) << stage;

    // 2 steps, then 2 more resumed, against the 4 straight steps above.
    const std::string split = ckpt("split" + stage);
    auto a = run("08_sharded", flags + zero + "--steps 2 --checkpoint-dir " + split);
    ASSERT_EQ(a.exit_code, 0) << a.output;
    auto b = run("08_sharded", flags + zero + "--steps 2 --resume --checkpoint-dir " + split);
    ASSERT_EQ(b.exit_code, 0) << b.output;
    EXPECT_NE(b.output.find("resumed from"), std::string::npos) << b.output;
    EXPECT_EQ(b.last("global_step"), "4") << b.output;
    EXPECT_EQ(b.last("averages_hash"), z0.last("averages_hash")) << b.output;
    EXPECT_TRUE(expected == testing::bytes_of(dir.path() / ("split" + stage) / name))
        << "a resumed --zero " << stage << " run ends with other bytes than one never stopped";
  }
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
  // Only ZeRO-3 gathers layers: the prefetch switch means nothing at another stage.
  auto p = run("08_sharded", kOneStep + "--devices 2 --zero 2 --gather-prefetch off");
  EXPECT_EQ(p.exit_code, 2) << p.output;
  EXPECT_NE(p.output.find("Use it with --zero 3"), std::string::npos) << p.output;
  EXPECT_EQ(p.output.find("step 0"), std::string::npos) << "refused before the first step";
  // Only ZeRO-2 reduce-scatters in buckets: the bucket size means nothing elsewhere.
  for (const char* stage : {"0", "1", "3"}) {
    auto b = run("08_sharded", kOneStep + "--devices 2 --bucket-mb 1 --zero " + stage);
    EXPECT_EQ(b.exit_code, 2) << b.output;
    EXPECT_NE(b.output.find("Use it with --zero 2"), std::string::npos) << b.output;
    EXPECT_EQ(b.output.find("step 0"), std::string::npos) << "refused before the first step";
  }
}


// --optimizer: momentum and Adam keep more state per parameter (a velocity; two moments),
// sharded from --zero 1 on as the moving averages are (with --zero 3 beside the parameter
// shard they update). Their rules are element-wise too, so each stage must end with its
// own --zero 0's parameters and averages, bit for bit. The tutorial's SGD is not repeated
// here: EveryStageIsChapterFoursMathBitForBit above runs it on 1, 2, 4 and 8 devices (and
// against chapter 4 itself).
class ShardedOptimizers : public ::testing::TestWithParam<std::tuple<std::string, int>> {};
INSTANTIATE_TEST_SUITE_P(
    OptimizersAndDevices, ShardedOptimizers,
    ::testing::Combine(::testing::Values("momentum", "adam"), ::testing::Values(2, 4)),
    [](const auto& info) {
      return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "devices";
    });

TEST_P(ShardedOptimizers, EveryStageEndsWithZeroZerosParametersBitForBit) {
  const auto& [optimizer, n] = GetParam();
  const std::string args = kMath + "--devices " + std::to_string(n) + " --optimizer " + optimizer;
  const std::string tag = optimizer + "-" + std::to_string(n);
  const auto z0 = temp_file("opt-z0-" + tag);
  auto whole = run("08_sharded", args + " --zero 0 --save-params " + z0.string());
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  EXPECT_EQ(whole.last("optimizer"), optimizer);
  const auto expected = saved_params(z0);
  ASSERT_EQ(expected.size(), model::kNumParameters);
  for (int stage : {1, 2, 3}) {
    const auto z = temp_file("opt-z" + std::to_string(stage) + "-" + tag);
    auto sharded = run("08_sharded", args + " --zero " + std::to_string(stage) +
                                         " --save-params " + z.string());
    ASSERT_EQ(sharded.exit_code, 0) << sharded.output;
    EXPECT_EQ(sharded.last("optimizer"), optimizer);
    EXPECT_TRUE(same_bits(expected, saved_params(z)))
        << optimizer << ", ZeRO-" << stage << ", " << n << " devices";
    EXPECT_EQ(whole.last("averages_hash"), sharded.last("averages_hash"))
        << optimizer << ", ZeRO-" << stage;
  }
}

// The flag must change the rule, or the test above compares SGD with itself three times:
// after three steps from the same start, each optimizer's parameters differ from the others'.
TEST(ShardedOptimizers, EachOptimizerTrainsDifferently) {
  std::vector<std::vector<float>> ends;
  for (const char* optimizer : {"sgd", "momentum", "adam"}) {
    const auto file = temp_file(std::string("differ-") + optimizer);
    auto r = run("08_sharded", kMath + "--devices 2 --zero 1 --optimizer " + optimizer +
                                   " --save-params " + file.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ends.push_back(saved_params(file));
  }
  EXPECT_FALSE(same_bits(ends[0], ends[1])) << "momentum ended as sgd did";
  EXPECT_FALSE(same_bits(ends[0], ends[2])) << "adam ended as sgd did";
  EXPECT_FALSE(same_bits(ends[1], ends[2])) << "adam ended as momentum did";
}

// The ledger's optimizer-state line against the formula with each optimizer's k (4, 8, 12
// bytes per parameter: the moving average, plus a velocity, plus two moments), stage 0
// (whole, on every device), stage 1 and stage 3 (one shard per device). A shard is at most one
// element longer than Ψ/N and each element carries k bytes, so the bound is one element's
// k bytes: [kΨ/N, kΨ/N + k). Over 2 devices Ψ divides evenly and the bytes are exact.
// Stage 0 holds everything whatever N is, so it runs on 2 devices only.
TEST(ShardedOptimizers, PeakOptimizerStateEqualsTheFormulaForEachOptimizerAndStage) {
  const std::vector<std::pair<std::string, model::Optimizer>> optimizers = {
      {"sgd", model::Optimizer::kSgd},
      {"momentum", model::Optimizer::kMomentum},
      {"adam", model::Optimizer::kAdam}};
  const std::vector<std::pair<int, int>> stages_and_devices = {{0, 2}, {1, 2}, {1, 4}, {3, 4}};
  for (const auto& [name, optimizer] : optimizers) {
    const double k = optimizer_state_bytes(optimizer);
    for (const auto& [stage, n] : stages_and_devices) {
      const std::string what =
          name + ", ZeRO-" + std::to_string(stage) + ", " + std::to_string(n) + " devices";
      auto r = run("08_sharded", kOneStep + "--devices " + std::to_string(n) + " --zero " +
                                     std::to_string(stage) + " --optimizer " + name);
      ASSERT_EQ(r.exit_code, 0) << r.output;
      const ZeroBytes formula = zero_bytes_per_device(stage, ZeroSizes{kPsi, n, 4, 4, k});
      const double state = r.number("peak_optimizer_state_bytes");
      EXPECT_GE(state, formula.optimizer_state) << what;
      EXPECT_LT(state, formula.optimizer_state + k) << what;
      if (stage == 0 || n == 2) {
        EXPECT_EQ(state, formula.optimizer_state) << what;
      }
      EXPECT_NEAR(r.number("formula_optimizer_state_bytes"), formula.optimizer_state, 0.05)
          << what;
      // The optimizer adds state only: below stage 2, parameters and gradients stay
      // chapter 4's (PeakBytesAndBytesOnTheWireEqualTheFormulas checks stages 2 and 3).
      if (stage < 2) {
        EXPECT_EQ(r.number("peak_parameters_bytes"), 4 * kPsi) << what;
        EXPECT_EQ(r.number("peak_gradients_bytes"), 4 * kPsi) << what;
      }
    }
  }
}

// Momentum's velocity and Adam's moments are in the checkpoint, put together from the
// towers' shards as the moving averages are (whole on every tower at stage 0; a shard each
// at stages 1 and 2, whose bucketed backward pass must not disturb them; beside the
// parameter shard at stage 3), and --resume hands each tower its
// ranges back. A run saving every step, SIGKILLed once it has logged step 3 (no handler
// runs; a save may be cut off mid-write), then resumed, ends with the --save-params bytes
// and the final checkpoint of a run never stopped. Had the state restarted from zero, the
// parameters would differ from the first resumed step on. Three towers: the shards differ
// in size. The tiny set's epoch is 2 steps of 3 x 4, so the kill lands mid-run, epochs behind.
class OptimizerKillAndResume
    : public ::testing::TestWithParam<std::tuple<std::string, int>> {};
INSTANTIATE_TEST_SUITE_P(
    OptimizersAndStages, OptimizerKillAndResume,
    ::testing::Combine(::testing::Values("momentum", "adam"), ::testing::Values(0, 1, 2, 3)),
    [](const auto& info) {
      return std::get<0>(info.param) + "_zero" + std::to_string(std::get<1>(info.param));
    });

TEST_P(OptimizerKillAndResume, EndsByteForByteAsARunNeverStopped) {
  namespace fs = std::filesystem;
  constexpr int kSteps = 7;
  const auto& [optimizer, stage] = GetParam();
  data::testing::TempDir dir;
  std::string flags = testing::tiny_set(dir.path());
  flags.replace(flags.find("--devices 2"), 11, "--devices 3");
  flags += "--optimizer " + optimizer + " --zero " + std::to_string(stage) + " ";
  const fs::path straight = dir.path() / "straight", killed = dir.path() / "killed";
  auto a = run("08_sharded", flags + "--steps " + std::to_string(kSteps) + " --checkpoint-dir " +
                                 straight.string() + " --save-params " + (dir.path() / "a.params").string());
  ASSERT_EQ(a.exit_code, 0) << a.output;

  std::vector<std::string> argv{std::string(TOWERS_BIN_DIR) + "/08_sharded"};
  const std::string killed_flags = flags + "--steps " + std::to_string(kSteps) +
                                   " --checkpoint-every 1 --checkpoint-dir " + killed.string();
  for (std::size_t start = 0; start < killed_flags.size();) {
    const std::size_t end = std::min(killed_flags.find(' ', start), killed_flags.size());
    if (end > start) argv.push_back(killed_flags.substr(start, end - start));
    start = end + 1;
  }
  auto b1 = testing::run_and_watch(argv, "step 3,", [](pid_t pid) { ::kill(pid, SIGKILL); });
  ASSERT_EQ(b1.exit_code, -1) << "not killed:\n" << b1.output;
  const auto latest = model::latest_checkpoint(killed);
  ASSERT_TRUE(latest.has_value()) << b1.output;
  const model::TrainingState saved = model::load_checkpoint(*latest);
  ASSERT_GE(saved.global_step, 3) << b1.output;
  ASSERT_LT(saved.global_step, kSteps) << b1.output;
  EXPECT_EQ(model::optimizer_name(saved.optimizer), optimizer);
  EXPECT_EQ(saved.optimizer_state.size(), (optimizer == "adam" ? 2 : 1) * model::kNumParameters);

  auto b2 = run("08_sharded", flags + "--steps " + std::to_string(kSteps - saved.global_step) +
                                  " --resume --checkpoint-dir " + killed.string() +
                                  " --save-params " + (dir.path() / "b.params").string());
  ASSERT_EQ(b2.exit_code, 0) << b2.output;
  EXPECT_NE(b2.output.find("resumed from " + latest->string()), std::string::npos) << b2.output;
  EXPECT_EQ(b2.last("global_step"), std::to_string(kSteps)) << b2.output;
  EXPECT_EQ(a.last("final_loss"), b2.last("final_loss"));
  EXPECT_EQ(a.last("averages_hash"), b2.last("averages_hash"));
  const std::string params = testing::bytes_of(dir.path() / "a.params");
  ASSERT_FALSE(params.empty()) << a.output;
  // EXPECT_TRUE, not EXPECT_EQ: a diff of two 4 MB strings would take gtest minutes.
  EXPECT_TRUE(params == testing::bytes_of(dir.path() / "b.params"))
      << "--save-params differ after kill -9 and --resume";
  const std::string name = model::checkpoint_name(kSteps);
  const std::string expected = testing::bytes_of(straight / name);
  ASSERT_FALSE(expected.empty()) << a.output;
  EXPECT_TRUE(expected == testing::bytes_of(killed / name))
      << name << " (parameters, averages and " << optimizer << "'s state) differs";
}

// A checkpoint continues only under the rule that wrote it: momentum's velocity is no Adam
// moment, SGD's checkpoint holds neither, and SGD (chapter 4, or --optimizer sgd) would drop
// a velocity. Each mismatch is refused before the first step, naming both optimizers and
// saying what to do, and the folder keeps its checkpoint untouched.
TEST(ShardedOptimizers, AResumeWithAnotherOptimizerIsRefusedBeforeTraining) {
  data::testing::TempDir dir;
  const std::string flags = testing::tiny_set(dir.path()) + "--steps 1 ";
  const std::string momentum = (dir.path() / "momentum").string(), sgd = (dir.path() / "sgd").string();
  auto m = run("08_sharded", flags + "--optimizer momentum --checkpoint-dir " + momentum);
  ASSERT_EQ(m.exit_code, 0) << m.output;
  auto s = run("08_sharded", flags + "--optimizer sgd --checkpoint-dir " + sgd);
  ASSERT_EQ(s.exit_code, 0) << s.output;
  const auto saved = dir.path() / "momentum" / model::checkpoint_name(1);
  const std::string before = testing::bytes_of(saved);
  ASSERT_FALSE(before.empty()) << m.output;

  struct Case { std::string program, args, saved, runs; };
  const std::vector<Case> cases = {
      {"08_sharded", "--optimizer adam --checkpoint-dir " + momentum, "momentum", "adam"},
      {"08_sharded", "--optimizer sgd --zero 3 --checkpoint-dir " + momentum, "momentum", "sgd"},
      {"04_nccl_iterator", "--checkpoint-dir " + momentum, "momentum", "sgd"},
      {"08_sharded", "--optimizer adam --checkpoint-dir " + sgd, "sgd", "adam"}};
  for (const Case& c : cases) {
    auto r = run(c.program, flags + "--resume " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.program << " " << c.args << ": " << r.output;
    EXPECT_NE(r.output.find("written with --optimizer " + c.saved + " and this run trains with " +
                            c.runs), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("Resume with --optimizer " + c.saved), std::string::npos)
        << "says what to do: " << r.output;
    EXPECT_EQ(r.output.find("step 0,"), std::string::npos) << "refused before the first step";
  }
  EXPECT_TRUE(before == testing::bytes_of(saved)) << "a refused run changed the checkpoint";
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "momentum" / model::checkpoint_name(2)));
  // The same rule resumes.
  auto same = run("08_sharded", flags + "--resume --optimizer momentum --checkpoint-dir " + momentum);
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_EQ(same.last("global_step"), "2") << same.output;
}

// Issue 38: an Adam run's --save-params file, put in a folder to resume from, was refused
// as "written with --optimizer sgd". It holds the parameters only, whatever trained it, and
// the message says so; an SGD run resumes from it, saying what starts again (it said
// "format 1", which the file is not).
TEST(ShardedOptimizers, ASaveParamsFileIsNamedAsSuchWhenResumed) {
  data::testing::TempDir dir;
  const std::string flags = testing::tiny_set(dir.path()) + "--steps 1 ";
  const std::filesystem::path folder = dir.path() / "from-params";
  std::filesystem::create_directories(folder);
  auto adam = run("08_sharded", flags + "--optimizer adam --save-params " +
                                    (folder / model::checkpoint_name(1)).string());
  ASSERT_EQ(adam.exit_code, 0) << adam.output;

  auto refused = run("08_sharded", flags + "--resume --optimizer adam --checkpoint-dir " +
                                       folder.string());
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("is a --save-params file: it holds the parameters only (no Adam "
                                "moments"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("Resume from a model.ckpt-<step> that --checkpoint-dir saved"),
            std::string::npos) << "says what to do: " << refused.output;
  EXPECT_EQ(refused.output.find("written with --optimizer sgd"), std::string::npos)
      << "an Adam run's file named as SGD's: " << refused.output;
  EXPECT_EQ(refused.output.find("step 0,"), std::string::npos) << "refused before the first step";

  auto sgd = run("04_nccl_iterator", flags + "--resume --checkpoint-dir " + folder.string());
  EXPECT_EQ(sgd.exit_code, 0) << sgd.output;
  EXPECT_NE(sgd.output.find("is a --save-params file, the parameters only: the moving averages "
                            "start again"), std::string::npos) << sgd.output;
  EXPECT_EQ(sgd.output.find("format 1"), std::string::npos) << sgd.output;
}

TEST(ShardedOptimizers, UnknownOptimizersAreRefusedBeforeTraining) {
  for (const char* bad : {"sgdd", "Adam", "lamb", "\"\""}) {
    auto r = run("08_sharded", kOneStep + "--devices 2 --optimizer " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
    EXPECT_NE(r.output.find("is not an optimizer this chapter has"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("--optimizer sgd"), std::string::npos) << "names the choices";
    EXPECT_EQ(r.output.find("step 0"), std::string::npos) << "refused before the first step";
  }
}

}  // namespace
}  // namespace towers

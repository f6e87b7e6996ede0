// SPDX-License-Identifier: MIT
// The closed form of chapter 8 reproduces the ZeRO paper's table and divides as each
// stage says.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/parameters.hpp"
#include "parallel/buckets.hpp"
#include "parallel/layer_gather.hpp"
#include "parallel/zero_memory.hpp"

namespace towers {
namespace {

// GB as the paper counts them: 1e9 bytes, rounded to the table's one decimal.
double table_gb(double bytes) { return std::round(bytes / 1e8) / 10; }

TEST(ZeroMemory, ReproducesThePapersTableForSevenAndAHalfBillionParametersOnSixtyFourGpus) {
  // ZeRO paper, Figure 1: Ψ = 7.5 B, N = 64, fp16 parameters and gradients (2 + 2 bytes),
  // Adam's fp32 state K = 12 bytes per parameter.
  const ZeroSizes paper{7.5e9, 64, 2, 2, 12};
  EXPECT_EQ(table_gb(zero_bytes_per_device(0, paper).total()), 120.0);
  EXPECT_EQ(table_gb(zero_bytes_per_device(1, paper).total()), 31.4);
  EXPECT_EQ(table_gb(zero_bytes_per_device(2, paper).total()), 16.6);
  EXPECT_EQ(table_gb(zero_bytes_per_device(3, paper).total()), 1.9);
}

TEST(ZeroMemory, EachStageShardsOneMoreKindOfState) {
  const ZeroSizes fp32{1000, 4, 4, 4, 4};  // the tutorial's: fp32, one moving average
  const ZeroBytes s0 = zero_bytes_per_device(0, fp32);
  const ZeroBytes s1 = zero_bytes_per_device(1, fp32);
  const ZeroBytes s2 = zero_bytes_per_device(2, fp32);
  const ZeroBytes s3 = zero_bytes_per_device(3, fp32);
  EXPECT_EQ(s0.parameters, 4000.0);
  EXPECT_EQ(s0.gradients, 4000.0);
  EXPECT_EQ(s0.optimizer_state, 4000.0);
  EXPECT_EQ(s1.optimizer_state, 1000.0);
  EXPECT_EQ(s1.gradients, 4000.0);
  EXPECT_EQ(s2.gradients, 1000.0);
  EXPECT_EQ(s2.parameters, 4000.0);
  EXPECT_EQ(s3.parameters, 1000.0);
  EXPECT_EQ(s3.total(), 3000.0);
}

TEST(ZeroMemory, OneDeviceShardsNothing) {
  const ZeroSizes one{12345, 1, 4, 4, 4};
  for (int stage = 0; stage <= kMaxZeroStage; ++stage) {
    EXPECT_EQ(zero_bytes_per_device(stage, one).total(), 12 * 12345.0) << "stage " << stage;
  }
}

// The transient terms: the whole gradient buffer from stage 2 on, the gathered window at
// stage 3, each added to the shard of its own category only.
TEST(ZeroMemory, TransientTermsAddToTheStagesThatHoldThem) {
  ZeroSizes fp32{1000, 4, 4, 4, 4};
  fp32.gradient_bucket = 1000;   // the whole buffer, for one step
  fp32.parameter_window = 300;   // two layers gathered at once
  EXPECT_EQ(zero_bytes_per_device(1, fp32).gradients, 4000.0);  // whole: no bucket to add
  EXPECT_EQ(zero_bytes_per_device(2, fp32).gradients, 4 * (250.0 + 1000));
  EXPECT_EQ(zero_bytes_per_device(2, fp32).parameters, 4000.0);
  EXPECT_EQ(zero_bytes_per_device(3, fp32).parameters, 4 * (250.0 + 300));
  EXPECT_EQ(zero_bytes_per_device(3, fp32).optimizer_state, 1000.0);
}

TEST(ZeroMemory, WireBytesAreTheAllReducesAndHalfAgainAtStageThree) {
  // 8 towers, 1000 fp32 parameters: each tower receives 7/8 of them twice per step.
  const double all_reduce = 2.0 * 7 * 1000 * 4;
  for (int stage = 0; stage <= 2; ++stage) {
    EXPECT_EQ(zero_wire_bytes_per_step(stage, 1000, 8, 4, 1000), all_reduce) << stage;
  }
  EXPECT_EQ(zero_wire_bytes_per_step(3, 1000, 8, 4, 1000), 1.5 * all_reduce);
  // A layer the backward pass does not read is not gathered again.
  EXPECT_EQ(zero_wire_bytes_per_step(3, 1000, 8, 4, 900), 1.5 * all_reduce - 7 * 100 * 4);
  EXPECT_EQ(zero_wire_bytes_per_step(3, 1000, 1, 4, 1000), 0.0);  // one tower: no wire
}

// Chapter 8's --optimizer: k is the moving average's 4 bytes plus 4 per float of the
// optimizer's own state, and only the optimizer-state column changes with it.
TEST(ZeroMemory, KPerOptimizerIsTheMovingAveragePlusItsOwnState) {
  EXPECT_EQ(optimizer_state_bytes(model::Optimizer::kSgd), 4.0);
  EXPECT_EQ(optimizer_state_bytes(model::Optimizer::kMomentum), 8.0);  // + velocity
  EXPECT_EQ(optimizer_state_bytes(model::Optimizer::kAdam), 12.0);     // + m and v
  const ZeroSizes adam{1000, 4, 4, 4, optimizer_state_bytes(model::Optimizer::kAdam)};
  EXPECT_EQ(zero_bytes_per_device(0, adam).optimizer_state, 12000.0);
  EXPECT_EQ(zero_bytes_per_device(1, adam).optimizer_state, 3000.0);
  EXPECT_EQ(zero_bytes_per_device(1, adam).parameters, 4000.0);
  EXPECT_EQ(zero_bytes_per_device(1, adam).total(), 11000.0);  // against 20000 unsharded
}

// Chapter 8's model, where one layer is most of it: local3, ZeRO-2's largest bucket B
// with one bucket per layer, holds 885,120 of the 1,068,298 parameters (83 %), and conv2
// with local3, the window W of layers ZeRO-3 holds gathered at once, 987,584 (92 %).
// Per device, fp32 and SGD (b_p = b_g = k = 4), with what each stage holds for a moment:
//   ZeRO-1  4Ψ            + 4Ψ            + 4Ψ/N
//   ZeRO-2  4Ψ            + 4(Ψ/N + B)    + 4Ψ/N
//   ZeRO-3  4(Ψ/N + W)    + 4(Ψ/N + Ψ)    + 4Ψ/N   (the whole gradient buffer in the step)
// ZeRO-2 is below ZeRO-1 when Ψ/N + B < Ψ (Ψ - B = 183,178): N > 5.8, from N = 6 on.
// ZeRO-3's parameters, Ψ/N + W, are below ZeRO-1's Ψ when Ψ/N < Ψ - W = 80,714: from
// N = 14 on; its gradients, Ψ/N + Ψ, never are.
// ZeRO-3 is above ZeRO-2 at every N: it saves Ψ - W - Ψ/N of parameters but holds Ψ - B
// more gradients, and W > B.
// ZeRO-3 is below ZeRO-1 when W + 2Ψ/N < Ψ: N > 2Ψ/(Ψ - W) = 26.5, from N = 27 on.
// Chapter 8's pages teach this; the chapter's test shows the ledger crossing at 26-27.
TEST(ZeroMemory, OnTheTutorialModelZeroTwoPassesZeroOneFromSixDevicesAndZeroThreeFrom27) {
  const double psi = static_cast<double>(model::kNumParameters);
  std::size_t largest = 0;
  for (const Bucket& bucket : make_buckets(0)) largest = std::max(largest, bucket.count);
  const double bucket = static_cast<double>(largest);
  const double window = static_cast<double>(LayerGather::window_elements());
  EXPECT_EQ(bucket, 885120.0);
  EXPECT_EQ(window, 987584.0);
  EXPECT_EQ(std::lround(100 * bucket / psi), 83);
  EXPECT_EQ(std::lround(100 * window / psi), 92);
  EXPECT_EQ(psi - bucket, 183178.0);
  EXPECT_EQ(psi - window, 80714.0);
  const auto total = [&](int stage, int n) {
    ZeroSizes sizes{psi, n, 4, 4, 4};
    sizes.gradient_bucket = stage == 2 ? bucket : stage == 3 ? psi : 0;
    sizes.parameter_window = stage == 3 ? window : 0;
    return zero_bytes_per_device(stage, sizes).total();
  };
  for (int n = 1; n <= 256; ++n) {
    EXPECT_EQ(total(2, n) < total(1, n), n >= 6) << n << " devices";
    EXPECT_GT(total(3, n), total(2, n)) << n << " devices";
    EXPECT_EQ(total(3, n) < total(1, n), n >= 27) << n << " devices";
    ZeroSizes zero3{psi, n, 4, 4, 4, psi, window};
    EXPECT_EQ(zero_bytes_per_device(3, zero3).parameters < 4 * psi, n >= 14) << n << " devices";
  }
  // As 08_sharded --devices N --zero S prints them (formula_total_bytes).
  EXPECT_NEAR(total(1, 5), 9401022.4, 0.05);
  EXPECT_NEAR(total(2, 5), 9522948.8, 0.05);
  EXPECT_NEAR(total(1, 6), 9258582.7, 0.05);
  EXPECT_NEAR(total(2, 6), 9238069.3, 0.05);
  EXPECT_NEAR(total(1, 26), 8710737.5, 0.05);
  EXPECT_NEAR(total(3, 26), 8716588.6, 0.05);
  EXPECT_NEAR(total(1, 27), 8704650.4, 0.05);
  EXPECT_NEAR(total(3, 27), 8698327.1, 0.05);
}

}  // namespace
}  // namespace towers

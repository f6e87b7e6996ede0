// SPDX-License-Identifier: MIT
// bench_train's per-op profile (bench/step_profile.hpp) on a real host step: every op of
// the step lands in a kind, the fused convolutions are divided among their phases, and
// the ops add up to about the step's wall time. Behaviour only: the speeds are
// bench_train's business.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/host/parallel.hpp"
#include "kernels/host/phase_clock.hpp"
#include "model/network.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "data/preprocess.hpp"
#include "runtime/runtime.hpp"
#include "base/timing.hpp"
#include "step_profile.hpp"

namespace towers::bench {
namespace {

TEST(StepProfile, EachOpNameHasItsKind) {
  const std::pair<const char*, const char*> name_and_kind[] = {
      {"conv2 grad gemm", "gemm"},
      {"conv1 grad gemv", "bias_grad"},
      {"norm1 grad lrn_grad", "lrn"},
      {"pool2 max_pool", "pool"},
      {"local3 relu", "elementwise"},
      {"loss softmax_xent", "loss"},
      {"sgd_update", "optimizer"},
      {"ema_update", "optimizer"},
      {"copy loss", "copy"},
      {"loss copy_loss", "copy"},
      {"conv2 im2col_gemm_bias_relu", "fused"},
      {"conv2 grad gemm_col2im", "fused"},
      {"conv2 something_new", "other"},
  };
  for (const auto& [name, kind] : name_and_kind) EXPECT_EQ(kind_of(name), kind) << name;
}

TEST(StepProfile, PhaseClockRecordsOnlyWhenOn) {
  host::take_phase_splits();
  {
    host::PhaseRecord record("off");
    host::PhaseTimer timer(record);
    timer.lap(host::Phase::kProduct);
  }
  EXPECT_TRUE(host::take_phase_splits().empty()) << "the clock is off by default";
  host::set_phase_clock(true);
  {
    host::PhaseRecord record("on");
    host::PhaseTimer timer(record);
    volatile double sink = 0;
    for (int i = 0; i < 100000; ++i) sink = sink + i;  // some time in the phase
    timer.lap(host::Phase::kIm2col);
  }
  host::set_phase_clock(false);
  const std::vector<host::PhaseSplit> splits = host::take_phase_splits();
  ASSERT_EQ(splits.size(), 1u);
  EXPECT_EQ(splits[0].op, "on");
  EXPECT_GT(splits[0].seconds[static_cast<int>(host::Phase::kIm2col)], 0.0);
  EXPECT_EQ(splits[0].seconds[static_cast<int>(host::Phase::kProduct)], 0.0);
}

// One tower's step as bench_train makes it, plus the moving averages (chapter 1's step),
// so the optimizer kind has both updates: batch 16, 2 op threads (the fused ops split).
class StepProfileOnHost : public ::testing::Test {
 protected:
  static constexpr int kBatch = 16;

  void SetUp() override {
    host::set_op_threads(2);
    RuntimeOptions options;
    options.backend = BackendChoice::kHost;
    options.devices = 1;
    runtime_ = Runtime::create(options);
    Device& device = runtime_->device(0);
    stream_ = device.create_stream();
    network_ = std::make_unique<model::Network>(device, kBatch);
    const std::size_t param_bytes = model::kNumParameters * sizeof(float);
    params_ = device.allocate(param_bytes);
    shadow_ = device.allocate(param_bytes);
    grads_ = device.allocate(param_bytes);
    images_ = device.allocate(std::size_t{kBatch} * data::kCropValues * sizeof(float));
    labels_ = device.allocate(kBatch * sizeof(int));
    losses_ = device.allocate(model::kLossCount * sizeof(float));
    model::initialize_parameters(1, params_.as<float>());  // host memory on this backend
    model::initialize_parameters(1, shadow_.as<float>());
    std::mt19937 rng(5);
    std::normal_distribution<float> pixel(0.0f, 1.0f);
    for (std::size_t i = 0; i < std::size_t{kBatch} * data::kCropValues; ++i) {
      images_.as<float>()[i] = pixel(rng);
    }
    for (int i = 0; i < kBatch; ++i) labels_.as<int>()[i] = i % 10;
  }

  void TearDown() override { host::set_op_threads(1); }

  double step() {
    const auto start = base::Clock::now();
    network_->forward_backward(*stream_, params_.as<float>(), images_.as<float>(),
                               labels_.as<int>(), grads_.as<float>());
    model::apply_gradients(*stream_, 0.1f, grads_.as<float>(), params_.as<float>());
    model::update_moving_averages(*stream_, 0.99f, params_.as<float>(), shadow_.as<float>());
    stream_->copy(losses_.data(), network_->losses(), losses_.bytes(), "copy loss");
    stream_->synchronize();
    return base::seconds_since(start);
  }

  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<model::Network> network_;
  Buffer params_, shadow_, grads_, images_, labels_, losses_;
};

TEST_F(StepProfileOnHost, EveryKindShowsAndTheOpsAddUpToTheStep) {
  step();  // warm: first-touch of the buffers
  const StepProfile p = profile_steps(runtime_->trace(), 2, [&] { return step(); });

  EXPECT_EQ(p.steps, 2);
  EXPECT_EQ(p.unsplit_fused, 0) << "every fused span has its phase record";
  // Spans lie inside the steps; enqueueing and waking the worker are the rest, and at
  // batch 16 the ops are most of it (a loose bound: a loaded machine delays wake-ups).
  EXPECT_LE(p.ops_ms, p.step_ms * 1.001);
  EXPECT_GE(p.ops_ms, p.step_ms * 0.5) << "ops " << p.ops_ms << " ms of a " << p.step_ms
                                       << " ms step";
  EXPECT_NEAR(p.outside_ms, p.step_ms - p.ops_ms, 1e-9);

  // The kinds divide the same spans: they add up to the ops.
  double kinds_ms = 0;
  ASSERT_EQ(p.kinds.size(), kinds().size());
  for (std::size_t i = 0; i < p.kinds.size(); ++i) {
    const ProfileRow& row = p.kinds[i];
    EXPECT_EQ(row.name, kinds()[i].name);
    kinds_ms += row.ms;
    if (row.name == "other") {
      EXPECT_EQ(row.calls, 0) << "an op of the step has no kind";
    } else if (row.name == "col2im") {
      // The host's input gradient of conv2 is a convolution of its own (implicit GEMM,
      // kernels/host/implicit_conv.hpp): no col2im pass, so none in the step.
      EXPECT_EQ(row.calls, 0) << "the host's convolutions have no col2im";
    } else {
      EXPECT_GT(row.calls, 0) << row.name << ": no op of this kind in the step";
      EXPECT_GT(row.ms, 0) << row.name;
    }
  }
  EXPECT_NEAR(kinds_ms, p.ops_ms, 1e-6 * p.ops_ms);

  // The fused forward convolutions are one span per layer, divided into two phases: the
  // padded copy of the input (im2col's kind) and the product, bias and ReLU in one pass.
  bool seen_conv2 = false;
  for (const ProfileRow& row : p.ops) {
    if (row.name != "conv2 im2col_gemm_bias_relu") continue;
    seen_conv2 = true;
    EXPECT_EQ(row.calls, 1);
    EXPECT_NE(row.split.find("im2col"), std::string::npos) << row.split;
    EXPECT_NE(row.split.find("gemm"), std::string::npos) << row.split;
    EXPECT_EQ(row.split.find("bias_relu"), std::string::npos) << row.split;
  }
  EXPECT_TRUE(seen_conv2);

  // The profile leaves the trace and the phase clock off.
  EXPECT_FALSE(runtime_->trace().enabled());
  EXPECT_FALSE(host::phase_clock_on());
}

}  // namespace
}  // namespace towers::bench

// SPDX-License-Identifier: MIT
// Network on the host backend with freshly initialized parameters: the loss at step 0 is
// the tutorial's ~4.67, SGD on one batch lowers it, and predict() counts what the logits
// say. Throughput is measured by bench/train_bench.cpp, not here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "data/preprocess.hpp"
#include "data/synthetic.hpp"
#include "device_io.hpp"
#include "model/gradient_layers.hpp"
#include "model/network.hpp"
#include "model/ops.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "trace/trace.hpp"

namespace towers::model {
namespace {

using testing::DeviceIo;

// One training batch of the synthetic set on `io`'s device: images [batch, 24, 24, 3].
struct Batch {
  const float* images;
  const int* labels;
  std::vector<std::int32_t> host_labels;
};

Batch synthetic_batch(DeviceIo& io, int batch, std::uint64_t seed) {
  const data::Dataset set = data::generate_synthetic(seed, data::Split::kTrain, 0, batch);
  std::vector<std::size_t> indices(batch);
  std::iota(indices.begin(), indices.end(), 0);
  std::vector<float> images(static_cast<std::size_t>(batch) * data::kCropValues);
  std::vector<std::int32_t> labels(batch);
  data::fill_batch(set, indices, data::Mode::kTrain, seed, 0, images.data(), labels.data());
  return {io.upload(images), io.upload(labels), labels};
}

// Freshly initialized parameters on the device.
float* initial_params(DeviceIo& io, std::uint64_t seed) {
  std::vector<float> params(kNumParameters);
  initialize_parameters(seed, params.data());
  return io.upload(params);
}

// A network of `batch` images on the host backend with what one step takes: a batch of
// the synthetic set (from `data_seed`), freshly initialized parameters (from
// `params_seed`) and zeroed gradients.
struct NetworkOnOneBatch {
  NetworkOnOneBatch(int batch_size, std::uint64_t data_seed, std::uint64_t params_seed)
      : batch(synthetic_batch(io, batch_size, data_seed)),
        params(initial_params(io, params_seed)),
        net(io.device(), batch_size) {}

  DeviceIo io{Backend::kHost};
  const Batch batch;
  float* const params;
  float* const grads = io.upload(std::vector<float>(kNumParameters, 0.0f));
  Network net;
};

// The same initialized parameters two ways, for comparing a pass over the flat buffer
// with one through Network::LayerParams (ZeRO-3's hook, chapter 9's ranges): the flat
// buffer, a separate device copy of each layer (gradient_layers() order), and two zeroed
// gradient buffers, one for each pass.
struct TwoWayParams {
  const float* flat;
  std::vector<const float*> layers;
  float* grads_a;
  float* grads_b;
};

TwoWayParams two_way_params(DeviceIo& io, std::uint64_t seed) {
  std::vector<float> host(kNumParameters);
  initialize_parameters(seed, host.data());
  TwoWayParams params{io.upload(host), {}, nullptr, nullptr};
  for (const GradientLayer& layer : gradient_layers()) {
    params.layers.push_back(io.upload(std::vector<float>(
        host.begin() + static_cast<std::ptrdiff_t>(layer.offset),
        host.begin() + static_cast<std::ptrdiff_t>(layer.offset + layer.count))));
  }
  params.grads_a = io.upload(std::vector<float>(kNumParameters, 0.0f));
  params.grads_b = io.upload(std::vector<float>(kNumParameters, 0.0f));
  return params;
}

// Whether the two passes' gradients and losses are equal bit for bit.
bool same_bits(DeviceIo& io, const float* a, const float* b, std::size_t count) {
  const std::vector<float> ha = io.download(a, count);
  const std::vector<float> hb = io.download(b, count);
  return std::memcmp(ha.data(), hb.data(), count * sizeof(float)) == 0;
}

TEST(Network, InitialLossIsLn10PlusWeightDecay) {
  NetworkOnOneBatch one(32, 7, 1);
  auto& [io, batch, params, grads, net] = one;
  net.forward(io.stream(), params, batch.images, batch.labels);
  const std::vector<float> losses = io.download(net.losses(), kLossCount);
  std::printf("  step 0: cross-entropy %.4f, weight decay %.4f, total %.4f\n",
              losses[kCrossEntropy], losses[kWeightDecay], losses[kTotalLoss]);
  // Tiny logits give ln 10; 0.004 * (884,736 + 73,728) * E[w^2] / 2 with the truncated
  // normal's E[w^2] = 0.774 * 0.04^2 gives ~2.37. The tutorial logs 4.68 at step 0.
  EXPECT_NEAR(losses[kCrossEntropy], std::log(10.0), 0.05);
  EXPECT_NEAR(losses[kWeightDecay], 2.37, 0.02);
  EXPECT_NEAR(losses[kTotalLoss], 4.67, 0.1);
  EXPECT_FLOAT_EQ(losses[kTotalLoss], losses[kCrossEntropy] + losses[kWeightDecay]);
}

TEST(Network, SgdStepsOnOneBatchLowerTheLoss) {
  NetworkOnOneBatch one(16, 11, 2);
  auto& [io, batch, params, grads, net] = one;
  std::vector<float> first, last;
  for (int step = 0; step < 30; ++step) {
    net.forward_backward(io.stream(), params, batch.images, batch.labels, grads);
    apply_gradients(io.stream(), kInitialLearningRate, grads, params);
    if (step == 0) first = io.download(net.losses(), kLossCount);
  }
  net.forward(io.stream(), params, batch.images, batch.labels);
  last = io.download(net.losses(), kLossCount);
  std::printf("  cross-entropy %.4f -> %.4f, total %.4f -> %.4f\n", first[kCrossEntropy],
              last[kCrossEntropy], first[kTotalLoss], last[kTotalLoss]);
  EXPECT_LT(last[kTotalLoss], first[kTotalLoss]);
  EXPECT_LT(last[kCrossEntropy], 0.5f * first[kCrossEntropy]);  // it memorizes the batch
}

TEST(Network, PredictCountsTop1HitsOfTheLogits) {
  constexpr int kBatch = 24;
  NetworkOnOneBatch one(kBatch, 13, 3);
  auto& [io, batch, params, grads, net] = one;
  net.predict(io.stream(), params, batch.images, batch.labels);
  const std::vector<float> logits = io.download(net.logits(), kBatch * 10);
  int expected = 0;
  for (int b = 0; b < kBatch; ++b) {
    const float* row = logits.data() + b * 10;
    expected += *std::max_element(row, row + 10) == row[batch.host_labels[b]] ? 1 : 0;
  }
  EXPECT_EQ(io.download(net.correct_count(), 1)[0], static_cast<float>(expected));
}

TEST(Network, TracedOpsNameTheirLayer) {
  // The 14 products of a step are told apart in the trace: "conv2 im2col_gemm_bias_relu"
  // for the forward product (fused with its neighbours, ops_fast_host.hpp), "conv2 grad
  // gemm" and "conv2 grad gemm_col2im" for conv2's two backward products; no op is left
  // unscoped.
  NetworkOnOneBatch one(2, 3, 1);
  auto& [io, batch, params, grads, net] = one;
  io.runtime().trace().set_enabled(true);
  net.forward_backward(io.stream(), params, batch.images, batch.labels, grads);
  io.stream().synchronize();
  io.runtime().trace().set_enabled(false);
  int gemms = 0, conv2_forward = 0, conv2_backward = 0;
  for (const TraceEvent& e : io.runtime().trace().take()) {
    EXPECT_NE(e.name.find(' '), std::string::npos) << "op without a layer: " << e.name;
    if (e.name.find("gemm") != std::string::npos) ++gemms;
    conv2_forward += e.name == "conv2 im2col_gemm_bias_relu";
    conv2_backward += e.name == "conv2 grad gemm" || e.name == "conv2 grad gemm_col2im";
  }
  EXPECT_EQ(gemms, 14) << "5 forward products, 9 backward (conv1 needs no dx)";
  EXPECT_EQ(conv2_forward, 1);
  EXPECT_EQ(conv2_backward, 2) << "dw and dx";
}

TEST(Network, RejectsABadBatchSizeAndActivationName) {
  DeviceIo io(Backend::kHost);
  EXPECT_THROW(Network(io.device(), 0), std::invalid_argument);
  Network net(io.device(), 2);
  EXPECT_THROW(net.activation("conv3"), std::out_of_range);
}

TEST(Network, RefusesABatchWhoseIm2colMatrixPassesInt32BeforeAllocating) {
  // conv2's im2col matrix has 230,400 floats per image: one more image than
  // kMaxBatchSize passes 2^31 elements. Refused with the bound and what to do, before a
  // byte is allocated (the host device would otherwise try to allocate 8.6 GB).
  static_assert(std::int64_t{kMaxBatchSize} * 230400 <= 2147483647);
  static_assert(std::int64_t{kMaxBatchSize + 1} * 230400 > 2147483647);
  DeviceIo io(Backend::kHost);
  try {
    Network too_big(io.device(), kMaxBatchSize + 1);
    FAIL() << "a batch of " << kMaxBatchSize + 1 << " was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(kMaxBatchSize)), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--batch-size"), std::string::npos) << e.what();
  }
}

// ZeRO-3's hook (chapter 8): the passes ask for each layer's parameters just before use
// and give them back after. Served from separate per-layer copies, the pass must compute
// the same losses and gradients, bit for bit, as from the flat buffer, and ask in the
// order LayerGather prefetches: conv1..softmax_linear forward, softmax_linear..conv2
// backward (conv1's weights are never read backward), each acquire followed by its release.
TEST(Network, ParametersByLayerGiveTheSameBitsAndAreAskedForInPassOrder) {
  DeviceIo io(Backend::kHost);
  constexpr int kBatch = 4;
  const Batch batch = synthetic_batch(io, kBatch, 5);
  const TwoWayParams params = two_way_params(io, 3);
  Network a(io.device(), kBatch), b(io.device(), kBatch);
  a.forward_backward(io.stream(), params.flat, batch.images, batch.labels, params.grads_a);
  std::vector<std::string> calls;
  Network::LayerParams by_layer{
      [&](int k) {
        calls.push_back("+" + gradient_layers()[k].name);
        return params.layers[k];
      },
      [&](int k) { calls.push_back("-" + gradient_layers()[k].name); }};
  b.forward_backward(io.stream(), by_layer, batch.images, batch.labels, params.grads_b);
  EXPECT_TRUE(same_bits(io, params.grads_a, params.grads_b, kNumParameters)) << "gradients";
  EXPECT_TRUE(same_bits(io, a.losses(), b.losses(), kLossCount)) << "losses";
  const std::vector<std::string> expected = {
      "+conv1", "-conv1", "+conv2", "-conv2", "+local3", "-local3", "+local4", "-local4",
      "+softmax_linear", "-softmax_linear", "+softmax_linear", "-softmax_linear", "+local4",
      "-local4", "+local3", "-local3", "+conv2", "-conv2"};
  EXPECT_EQ(calls, expected);
}

// The backward pass reads a layer's weights only for its input gradient (dy w^T) and its
// weight decay, so it asks for them after the weight and bias gradients (x^T dy, dy^T
// ones): ZeRO-3's backward gather then travels while those compute (chapter 8). Checked
// in the hook: when the backward pass asks for layer k, the ops enqueued so far have
// already written k's bias gradient, whole and final (biases take no weight decay).
TEST(Network, TheBackwardPassAsksForALayerAfterItsWeightGradients) {
  DeviceIo io(Backend::kHost);
  constexpr int kBatch = 4;
  const Batch batch = synthetic_batch(io, kBatch, 9);
  const TwoWayParams params = two_way_params(io, 4);
  float* const layer_grads = params.grads_b;
  Network a(io.device(), kBatch), b(io.device(), kBatch);
  a.forward_backward(io.stream(), params.flat, batch.images, batch.labels, params.grads_a);
  const std::vector<float> final_grads = io.download(params.grads_a, kNumParameters);
  std::vector<int> acquires(gradient_layers().size(), 0);
  int checked = 0;
  Network::LayerParams by_layer{
      [&](int k) {
        const GradientLayer& layer = gradient_layers()[static_cast<std::size_t>(k)];
        if (++acquires[static_cast<std::size_t>(k)] == 2) {  // the backward pass's
          const ParameterView& biases = parameter(layer.name + "/biases");
          const std::vector<float> now = io.download(layer_grads + biases.offset, biases.count);
          EXPECT_EQ(std::memcmp(now.data(), final_grads.data() + biases.offset,
                                biases.count * sizeof(float)), 0)
              << layer.name << "'s bias gradient is not written when its weights are asked for";
          ++checked;
        }
        return params.layers[static_cast<std::size_t>(k)];
      },
      [](int) {}};
  b.forward_backward(io.stream(), by_layer, batch.images, batch.labels, layer_grads);
  EXPECT_EQ(checked, 4) << "softmax_linear, local4, local3 and conv2 are asked for again";
  EXPECT_TRUE(same_bits(io, params.grads_a, layer_grads, kNumParameters)) << "gradients";
}

// Chapter 9's layer ranges and ZeRO-3's layer hook run the same per-layer code: a pass cut
// into two ranges (forward_layers, loss, backward_layers on the flat buffer) computes the
// losses and gradients of the pass that takes every layer's parameters through
// Network::LayerParams, bit for bit.
TEST(Network, LayerRangesGiveTheBitsOfTheLayerHook) {
  DeviceIo io(Backend::kHost);
  constexpr int kBatch = 4;
  const Batch batch = synthetic_batch(io, kBatch, 7);
  const TwoWayParams params = two_way_params(io, 5);
  const float* const flat = params.flat;
  float* const hook_grads = params.grads_a;
  float* const range_grads = params.grads_b;
  Network hooked(io.device(), kBatch), ranged(io.device(), kBatch);
  int acquired = 0;
  Network::LayerParams by_layer{[&](int k) {
                                  ++acquired;
                                  return params.layers[static_cast<std::size_t>(k)];
                                },
                                [](int) {}};
  hooked.forward_backward(io.stream(), by_layer, batch.images, batch.labels, hook_grads);
  EXPECT_EQ(acquired, 9) << "five layers forward, four backward (conv1 is not read)";
  // Two stages cut after norm2, as a pipeline would: the second reads the first's output.
  ranged.forward_layers(io.stream(), flat, kConv1, kNorm2, batch.images);
  ranged.forward_layers(io.stream(), flat, kPool2, kSoftmaxLinear, nullptr);
  ranged.loss(io.stream(), flat, batch.labels);
  ranged.backward_layers(io.stream(), flat, kPool2, kSoftmaxLinear, range_grads);
  ranged.backward_layers(io.stream(), flat, kConv1, kNorm2, range_grads);
  EXPECT_TRUE(same_bits(io, hook_grads, range_grads, kNumParameters)) << "gradients";
  EXPECT_TRUE(same_bits(io, hooked.losses(), ranged.losses(), kLossCount)) << "losses";
  const std::vector<float> gb = io.download(range_grads, kNumParameters);
  EXPECT_GT(std::count_if(gb.begin(), gb.end(), [](float g) { return g != 0.0f; }), 0);
}

}  // namespace
}  // namespace towers::model

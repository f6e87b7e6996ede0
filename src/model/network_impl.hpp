// SPDX-License-Identifier: MIT
// Network::Impl: the buffers of one tower's Network and the layer helpers that fill them.
// Private to src/model (network.cpp runs the forward pass, network_backward.cpp the
// backward pass); nothing outside the model includes this header.
//
// Every buffer is device memory of the Network's device, sized for batch_size images.
// Buffers are reused where lifetimes allow: the backward pass writes d(col2) into col2,
// and passes each activation gradient back and forth between grad_a and grad_b.
#pragma once


#include "data/cifar10.hpp"
#include "model/network.hpp"
#include "model/ops.hpp"
#include "model/ops_fast_host.hpp"
#include "runtime/memory.hpp"

namespace towers::model {

using math::Nhwc;

/// Convolution kernels are 5 x 5; local3 reads 6 * 6 * 64 values; the logits per image are
/// the data's classes (data::kNumClasses).
inline constexpr int kKernel = 5;
/// pool2 flattened: 6 * 6 * 64 values per image, in (h, w, c) order.
inline constexpr int kFlat = 6 * 6 * 64;
/// norm1 and norm2: tf.nn.lrn(depth_radius=4, bias=1.0, alpha=0.001/9.0, beta=0.75).
inline constexpr ops::LrnParams kLrn{};

/// Buffers and layer helpers of one Network.
struct Network::Impl {
  /// Allocates every buffer for `batch` images on `device` and fills `ones` (blocks).
  Impl(Device& device, int batch);

  /// y = relu(conv5x5_same(x, w) + bias); col receives im2col(x). x has shape `shape`.
  void conv_forward(Stream& s, const float* x, Nhwc shape, const float* w, const float* bias,
                    int out_channels, float* col, float* y);
  /// y[B, out] = x[B, in] w[in, out] + bias, then ReLU when `relu`.
  void dense_forward(Stream& s, const float* x, int in, const float* w, const float* bias,
                     int out, bool relu, float* y);
  /// One layer's forward pass (Layer); conv1 reads `images`, the others the layer before.
  void forward_layer(Stream& s, int layer, const float* params, const float* images);
  /// inference(): images -> logits, keeping every activation for the backward pass.
  void inference(Stream& s, const float* params, const float* images);
  /// loss(): cross-entropy (and dlogits), weight decay and total into `losses`.
  void loss(Stream& s, const float* params, const int* labels);
  /// Gradients of the total loss into grads[kNumParameters]; needs inference() and loss().
  /// Calls layer_done(k) (when set) once gradient_layers()[k]'s gradients are enqueued.
  void backward(Stream& s, const float* params, float* grads,
                const LayerDone& layer_done = nullptr);
  /// One layer's backward pass: reads its output's gradient from output_gradient(layer),
  /// leaves its input's in output_gradient(layer - 1) (conv1: none). `layer_enqueued` is
  /// called right after the last op writing a variable layer's gradients (chapter 6).
  void backward_layer(Stream& s, int layer, const float* params, float* grads,
                      const std::function<void()>& layer_enqueued);
  /// The buffer holding the gradient of `layer`'s output during the backward pass: the
  /// activation gradients alternate between grad_a and grad_b (network_backward.cpp).
  Buffer& output_gradient(int layer);
  /// The buffer holding `layer`'s output.
  Buffer& layer_output(int layer);

  /// Weight and bias gradients of a layer y = x w + b over `rows` rows, from dy[rows, out]:
  /// dw[in, out] = x^T dy, db[out] = dy^T ones. Then dx[rows, in] = dy w^T when dx is set.
  void linear_backward(Stream& s, int rows, int in, int out, const float* x, const float* w,
                       const float* dy, float* dw, float* db, float* dx);

  int batch_size;  ///< B

  Buffer col1;          ///< im2col(images): [B * 24 * 24, 75]
  Buffer conv1;         ///< [B, 24, 24, 64], after ReLU
  Buffer pool1;         ///< [B, 12, 12, 64]
  Buffer pool1_argmax;  ///< int, same shape as pool1
  Buffer norm1;         ///< [B, 12, 12, 64]
  Buffer norm1_scale;   ///< LRN scale, kept for backward
  Buffer col2;          ///< im2col(norm1): [B * 12 * 12, 1600]; later d(col2). The largest.
  Buffer conv2;         ///< [B, 12, 12, 64], after ReLU
  Buffer norm2;         ///< [B, 12, 12, 64]
  Buffer norm2_scale;   ///< LRN scale, kept for backward
  Buffer pool2;         ///< [B, 6, 6, 64] = [B, 2304]
  Buffer pool2_argmax;  ///< int, same shape as pool2
  Buffer local3;        ///< [B, 384], after ReLU
  Buffer local4;        ///< [B, 192], after ReLU
  Buffer logits;        ///< [B, 10]
  Buffer example_loss;  ///< [B] cross-entropy per image
  Buffer dlogits;       ///< [B, 10] gradient of the mean cross-entropy
  Buffer losses;        ///< [kLossCount]
  Buffer scratch;       ///< [1] one dot product at a time
  Buffer correct;       ///< [B] 1 where top-1 is right (predict)
  Buffer correct_count; ///< [1] sum of `correct`
  Buffer grad_a;        ///< [B * 24 * 24 * 64] activation gradients, ping
  Buffer grad_b;        ///< same size, pong
  Buffer ones;          ///< [B * 24 * 24] all 1: sums and bias gradients as products
};

}  // namespace towers::model

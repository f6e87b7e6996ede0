// SPDX-License-Identifier: MIT
// Network::Impl: the buffers of one tower's Network and the layer helpers that fill them.
// Private to src/model (network.cpp runs the forward pass, network_backward.cpp the
// backward pass); nothing outside the model includes this header.
//
// Every buffer is device memory of the Network's device, sized for batch_size images.
// Buffers are reused where lifetimes allow: the backward pass writes conv2's input
// gradient's workspace into col2, and passes each activation gradient back and forth
// between grad_a and grad_b.
#pragma once


#include "data/cifar10.hpp"
#include "model/network.hpp"
#include "model/ops.hpp"
#include "model/ops_fast_host.hpp"
#include "runtime/memory.hpp"

namespace towers::model {

using math::Nhwc;

/// Where a backward pass writes gradients: `data` holds flat elements [from, from + count)
/// of the kNumParameters-long gradient buffer (the whole of it, or one ZeRO-2 bucket).
struct GradientSpan {
  float* data;        ///< where flat element `from` is written
  std::size_t from;   ///< the first flat element `data` holds
  std::size_t count;  ///< how many flat elements `data` holds
};

/// Convolution kernels are 5 x 5; local3 reads 6 * 6 * 64 values; the logits per image are
/// the data's classes (data::kNumClasses).
inline constexpr int kKernel = 5;
/// pool2 flattened: 6 * 6 * 64 values per image, in (h, w, c) order.
inline constexpr int kFlat = 6 * 6 * 64;
/// norm1 and norm2: tf.nn.lrn(depth_radius=4, bias=1.0, alpha=0.001/9.0, beta=0.75).
inline constexpr ops::LrnParams kLrn{};

/// gradient_layers() indices of the five layers with variables (softmax_linear's gradients
/// are final first). Not the Layer enum of network.hpp, which counts all nine layers.
enum GradientLayerIndex {
  kSoftmaxLayer = 0,  ///< softmax_linear
  kLocal4Layer = 1,   ///< local4
  kLocal3Layer = 2,   ///< local3
  kConv2Layer = 3,    ///< conv2
  kConv1Layer = 4,    ///< conv1
};

/// Where a pass reads the parameters: one flat buffer (every chapter), or layer by layer
/// through Network::LayerParams (ZeRO-3). With the flat buffer acquire() is the layer's
/// range of it and release() does nothing, so both ways enqueue the same ops.
class ParamSource {
 public:
  /// Every layer inside `flat`, which holds the flat buffer's elements from element `from`
  /// on: the whole buffer by default; chapter 10 hands softmax_linear's variables alone.
  explicit ParamSource(const float* flat, std::size_t from = 0) : flat_(flat), from_(from) {}
  /// Each layer from `layers` (which must outlive this object).
  explicit ParamSource(const Network::LayerParams& layers) : layers_(&layers) {}
  /// Whether the layers come one by one (the loss's weight decay is then taken in the
  /// forward pass, while its layers are held).
  bool by_layer() const { return layers_ != nullptr; }
  /// Layer `layer`'s parameters, laid out as in the flat buffer from the layer's offset.
  const float* acquire(int layer) const;
  /// No op reads layer `layer`'s parameters after this.
  void release(int layer) const;

 private:
  const float* flat_ = nullptr;
  std::size_t from_ = 0;  // the flat element flat_ points at
  const Network::LayerParams* layers_ = nullptr;
};

/// Variable `name` (of layer `layer`) inside that layer's parameters `layer_params`.
const float* variable(const float* layer_params, int layer, const char* name);

/// The GradientLayerIndex of a Layer with variables (conv1, conv2, local3, local4,
/// softmax_linear), or -1 for the pooling and normalization layers, which have none.
int gradient_layer_index(int layer);

/// Buffers and layer helpers of one Network.
struct Network::Impl {
  /// Allocates every buffer for `batch` images on `device` and fills `ones` (blocks).
  Impl(Device& device, int batch);

  /// y = relu(conv5x5_same(x, w) + bias); col receives what the weight gradient reads
  /// (ops_fast_host.hpp: the host x zero-padded, cuda im2col(x)). x has shape `shape`.
  void conv_forward(Stream& s, const float* x, Nhwc shape, const float* w, const float* bias,
                    int out_channels, float* col, float* y);
  /// y[B, out] = x[B, in] w[in, out] + bias, then ReLU when `relu`.
  void dense_forward(Stream& s, const float* x, int in, const float* w, const float* bias,
                     int out, bool relu, float* y);
  /// One layer's forward pass (Layer); conv1 reads `images`, the others the layer before.
  /// A layer with variables acquires them from `params` just before its ops and releases
  /// them after; with parameters by layer, local3 and local4 add their weight-decay terms
  /// while they are held.
  void forward_layer(Stream& s, int layer, const ParamSource& params, const float* images);
  /// inference(): images -> logits, keeping every activation for the backward pass.
  void inference(Stream& s, const ParamSource& params, const float* images);
  /// loss(): cross-entropy (and dlogits), weight decay and total into `losses`. With
  /// parameters by layer the weight decay was summed by inference() already. Without
  /// `params` (null) no weight decay is added: its entry is 0 and the total the cross-entropy.
  void loss(Stream& s, const ParamSource* params, const int* labels);
  /// Adds wd * sum(w^2) / 2 of each decayed variable of layer `layer` (parameters
  /// `layer_params`) to losses[kWeightDecay], in buffer order.
  void weight_decay_terms(Stream& s, int layer, const float* layer_params);
  /// Gradients of the total loss into grads[kNumParameters]; needs inference() and loss().
  /// Calls layer_done(k) (when set) once gradient_layers()[k]'s gradients are enqueued.
  void backward(Stream& s, const ParamSource& params, float* grads,
                const LayerDone& layer_done = nullptr);
  /// One layer's backward pass: reads its output's gradient from output_gradient(layer),
  /// leaves its input's in output_gradient(layer - 1) (conv1: none). `layer_enqueued` is
  /// called right after the last op writing a variable layer's gradients (chapter 6).
  /// Its variables are acquired and released as in forward_layer(), except conv1's: no
  /// gradient is taken for the images, so its weights are not read. `grads` holds part or
  /// all of the flat gradient buffer (see Network::backward_layers()).
  void backward_layer(Stream& s, int layer, const ParamSource& params, const GradientSpan& grads,
                      const std::function<void()>& layer_enqueued);
  /// The buffer holding the gradient of `layer`'s output during the backward pass: the
  /// activation gradients alternate between grad_a and grad_b (network_backward.cpp).
  Buffer& output_gradient(int layer);
  /// The buffer holding `layer`'s output.
  Buffer& layer_output(int layer);

  /// Weight and bias gradients of a layer y = x w + b over `rows` rows, from dy[rows, out]:
  /// dw[in, out] = x^T dy, db[out] = dy^T ones. They do not read w.
  void weight_gradients(Stream& s, int rows, int in, int out, const float* x, const float* dy,
                        float* dw, float* db);
  /// The same layer's input gradient dx[rows, in] = dy w^T: the one product that reads w.
  void input_gradient(Stream& s, int rows, int in, int out, const float* dy, const float* w,
                      float* dx);
  /// Weight and bias gradients of a conv layer (input shape `shape`, 64 outputs) from
  /// dy and what conv_forward left in col: dw = im2col(x)^T dy, db = dy^T ones.
  void conv_weight_gradients(Stream& s, Nhwc shape, const float* col, const float* dy,
                             float* dw, float* db);

  int batch_size;  ///< B

  /// The conv layers' workspaces, sized for im2col's matrix, which the cuda backend
  /// keeps there; the host's implicit products use the start of them for their inputs
  /// zero-padded (ops_fast_host.hpp).
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

// SPDX-License-Identifier: MIT
// Network: the tutorial's CIFAR-10 model for one tower, forward and backward.
//
// A Network owns the activations and workspace for one batch size on one device; the
// parameters and gradients are flat buffers it is handed (parameters.hpp). Every method
// only enqueues work on the given stream (ops.hpp) and returns at once; the stream's
// order is the only synchronization inside a tower. Use one Network per tower; a Network
// is not shared between streams.
//
//   conv1 -> pool1 -> norm1 -> conv2 -> norm2 -> pool2 -> local3 -> local4 -> softmax_linear
//
// Shapes: images [batch, 24, 24, 3] NHWC float (standardized), labels [batch] int32.
// Introduced in chapter 1.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/parameters.hpp"
#include "runtime/device.hpp"
#include "runtime/stream.hpp"

namespace towers::model {

/// Indices into the loss vector a Network writes on its device.
enum LossIndex {
  kCrossEntropy = 0,  ///< mean softmax cross-entropy over the batch
  kWeightDecay = 1,   ///< sum over variables of wd * sum(w^2) / 2 (local3, local4)
  kTotalLoss = 2,     ///< kCrossEntropy + kWeightDecay: the loss the tutorial logs
  kLossCount = 3,     ///< number of entries in losses()
};

/// The largest batch a Network takes. Its largest buffer, conv2's im2col matrix
/// [batch * 12 * 12, 5 * 5 * 64], holds 230,400 floats per image; the model's element
/// counts and cuBLAS's dimensions are int, so that matrix must stay below 2^31 elements.
/// (The kernels index in 64 bits; this bound is the model's.)
inline constexpr int kMaxBatchSize = 2147483647 / (12 * 12 * 5 * 5 * 64);  // 9,320

/// The model's layers in forward order: the units a pipeline cuts between (chapter 9).
/// softmax_linear's output is the logits; the loss follows it on the same stage.
enum Layer {
  kConv1, kPool1, kNorm1, kConv2, kNorm2, kPool2, kLocal3, kLocal4, kSoftmaxLinear,
  kLayerCount,  ///< 9
};

/// One tower's model: activations and workspace for `batch_size` images on `device`.
class Network {
 public:
  /// Allocates all activations for `batch_size` on `device`; throws OutOfMemory, or
  /// std::invalid_argument for batch_size <= 0 or > kMaxBatchSize. Blocks until its constant buffers are
  /// filled (on a stream of its own), so every stream may use it afterwards.
  Network(Device& device, int batch_size);
  /// Frees the buffers; synchronize the streams that used them first.
  ~Network();
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  /// The number of images every pass of this Network takes.
  int batch_size() const;

  /// Enqueues the forward pass and the loss (tower_loss): logits, mean cross-entropy,
  /// weight decay and their sum into losses(). params: [kNumParameters] on this device.
  void forward(Stream& stream, const float* params, const float* images, const int* labels);

  /// Enqueues forward() then the backward pass, writing d(total loss)/d(params) into
  /// grads[kNumParameters] (overwritten, not accumulated).
  void forward_backward(Stream& stream, const float* params, const float* images,
                        const int* labels, float* grads);
  /// Called while the backward pass is enqueued, with k, right after the last op that
  /// writes the gradients of gradient_layers()[k]: what the caller enqueues on the stream
  /// then (record an event) runs as soon as those gradients are final.
  using LayerDone = std::function<void(int layer)>;
  /// As above, calling `layer_done(k)` for k = 0 (softmax_linear) .. 4 (conv1) as each
  /// layer's gradients are enqueued, so another stream may start averaging them while the
  /// backward pass goes on. Introduced in chapter 6.
  void forward_backward(Stream& stream, const float* params, const float* images,
                        const int* labels, float* grads, const LayerDone& layer_done);

  /// Where the passes find each layer's parameters when they are not one flat buffer
  /// (ZeRO-3, chapter 8: each layer is gathered from the towers' shards just before use).
  /// acquire(k) is called just before the first op reading the parameters of
  /// gradient_layers()[k] is enqueued, and returns where they are: that layer's variables
  /// laid out as in the flat buffer from gradient_layers()[k].offset on. release(k) is
  /// called right after the last op reading them is enqueued. The forward pass acquires
  /// conv1, conv2, local3, local4, softmax_linear (and computes the weight-decay terms
  /// while local3 and local4 are held); the backward pass softmax_linear, local4, local3,
  /// conv2, each after its weight and bias gradients (which do not read the weights), just
  /// before its input gradient: it never reads conv1's weights, as no gradient is taken
  /// for the images.
  struct LayerParams {
    std::function<const float*(int layer)> acquire;  ///< layer k's parameters, from now on
    std::function<void(int layer)> release;          ///< layer k's parameters are read no more
  };
  /// As forward_backward(), with the parameters acquired layer by layer from `params`.
  /// Same ops on the same values, so the same bits as with one flat buffer.
  void forward_backward(Stream& stream, const LayerParams& params, const float* images,
                        const int* labels, float* grads);

  /// Enqueues the forward pass (no loss, no backward) and counts correct top-1 predictions
  /// (in_top_k, k = 1) into correct_count() (eval).
  void predict(Stream& stream, const float* params, const float* images, const int* labels);

  // ---- Layer by layer: a pipeline stage runs a range of layers (chapter 9) ----
  // forward() is forward_layers(0, last) then loss(); forward_backward() adds
  // backward_layers(last, 0): the same ops on the same values, so a model cut into stages
  // that call these computes the bits one Network computes.

  /// The layers' names, in forward order ("conv1" ... "softmax_linear").
  static const std::vector<std::string>& layer_names();
  /// Floats of `layer`'s output per image (softmax_linear: the 10 logits).
  static int layer_output_floats(int layer);
  /// Enqueues the forward pass of layers first..last (inclusive). Layer `first` reads the
  /// images when first == 0, else layer_output(first - 1), which the caller filled.
  /// `params` may hold only part of the flat parameter buffer, from element `params_from`
  /// on: a variable at flat offset o is read at params[o - params_from] (chapter 10 keeps
  /// softmax_linear's variables apart from the convolutions'; a layer before that part is a
  /// logic_error). By default the whole buffer.
  void forward_layers(Stream& stream, const float* params, int first, int last,
                      const float* images, std::size_t params_from = 0);
  /// Enqueues the loss of the last forward pass (needs layers up to softmax_linear): the
  /// losses, and the logits' gradient that backward_layers() starts from.
  void loss(Stream& stream, const float* params, const int* labels);
  /// As loss(), without the weight decay: losses()[kWeightDecay] is 0 and the total is the
  /// cross-entropy. For a caller that holds local3's and local4's weights elsewhere and adds
  /// their decay itself (chapter 10 splits them over devices).
  void loss_without_decay(Stream& stream, const int* labels);
  /// Enqueues the backward pass of layers last..first, writing their variables' gradients
  /// into grads (overwritten). Layer `last` reads its output's gradient from
  /// output_gradient(last) (after loss() when last is softmax_linear; else the caller
  /// filled it); when first > 0 the gradient of its input is left in
  /// output_gradient(first - 1). `grads` may hold only part of the flat gradient buffer,
  /// `grads_count` elements from element `grads_from` on: a variable at flat offset o is
  /// written at grads[o - grads_from] (ZeRO-2 hands one bucket's buffer; by default the
  /// whole buffer). A layer whose variables lie outside that part is a logic_error.
  /// `params_from`: where `params` starts in the flat buffer, as in forward_layers().
  void backward_layers(Stream& stream, const float* params, int first, int last, float* grads,
                       std::size_t grads_from = 0, std::size_t grads_count = kNumParameters,
                       std::size_t params_from = 0);
  /// Device pointer to `layer`'s output [batch, layer_output_floats(layer)].
  float* layer_output(int layer);
  /// Device pointer to the gradient of `layer`'s output, same shape (a workspace buffer:
  /// valid from the backward of layer + 1 until the backward of layer).
  float* output_gradient(int layer);

  /// Device pointer to [kLossCount] floats written by forward(): see LossIndex.
  const float* losses() const;
  /// Device pointer to the logits [batch, 10] of the last forward pass.
  const float* logits() const;
  /// Device pointer to one float: the number of correct predictions of the last predict().
  const float* correct_count() const;

  /// Device pointer to one activation of the last forward pass, for tests and debugging:
  /// "conv1" [batch, 24, 24, 64], "pool1", "norm1", "conv2", "norm2" [batch, 12, 12, 64],
  /// "pool2" [batch, 6, 6, 64], "local3" [batch, 384], "local4" [batch, 192], "logits"
  /// [batch, 10]; NHWC, after ReLU where the layer has one. Throws std::out_of_range
  /// for other names.
  const float* activation(const std::string& name) const;
  /// The names activation() accepts, in forward order.
  static const std::vector<std::string>& activation_names();

  /// Multiply-adds of the matrix products of one image's training step (forward and
  /// backward, as forward_backward computes them: no gradient for the images), from the
  /// layers' weight shapes and output sizes. Twice this is the FLOPs bench_train's
  /// ceiling counts; the elementwise ops, pooling and LRN are left out.
  static double multiply_adds_per_image();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace towers::model

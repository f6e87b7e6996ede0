// SPDX-License-Identifier: MIT
// Network: cifar10.py's inference() and loss() forward, and their gradients backward,
// composed from ops.hpp. Each layer is a few op calls; each call only enqueues.
//
// Shapes (B = batch size): images [B, 24, 24, 3] -> conv1 [B, 24, 24, 64] -> pool1
// [B, 12, 12, 64] -> norm1 -> conv2 -> norm2 (all [B, 12, 12, 64]) -> pool2 [B, 6, 6, 64]
// = [B, 2304] -> local3 [B, 384] -> local4 [B, 192] -> logits [B, 10].
#include "model/network.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "model/gradient_layers.hpp"
#include "model/network_impl.hpp"
#include "model/ops.hpp"
#include "model/parameters.hpp"

namespace towers::model {
namespace {

// Device memory for `count` values of T. Everything a Network holds is counted as
// activations (with the im2col workspace and the loss scalars): memory that grows with
// the batch, not with the parameters, and that sharding them does not shrink (chapter 8).
template <typename T>
Buffer allocate(Device& device, std::size_t count) {
  return device.allocate(std::max<std::size_t>(count, 1) * sizeof(T), MemoryCategory::kActivations);
}

}  // namespace

Network::Impl::Impl(Device& device, int batch) : batch_size(batch) {
  const auto b = static_cast<std::size_t>(batch);
  auto floats = [&](std::size_t n) { return allocate<float>(device, n); };
  col1 = floats(b * 24 * 24 * math::im2col_columns(kKernel, 3));
  conv1 = floats(b * 24 * 24 * 64);
  pool1 = floats(b * 12 * 12 * 64);
  pool1_argmax = allocate<int>(device, b * 12 * 12 * 64);
  norm1 = floats(b * 12 * 12 * 64);
  norm1_scale = floats(b * 12 * 12 * 64);
  col2 = floats(b * 12 * 12 * math::im2col_columns(kKernel, 64));
  conv2 = floats(b * 12 * 12 * 64);
  norm2 = floats(b * 12 * 12 * 64);
  norm2_scale = floats(b * 12 * 12 * 64);
  pool2 = floats(b * 6 * 6 * 64);
  pool2_argmax = allocate<int>(device, b * 6 * 6 * 64);
  local3 = floats(b * 384);
  local4 = floats(b * 192);
  logits = floats(b * data::kNumClasses);
  example_loss = floats(b);
  dlogits = floats(b * data::kNumClasses);
  losses = floats(kLossCount);
  scratch = floats(1);
  correct = floats(b);
  correct_count = floats(1);
  grad_a = floats(b * 24 * 24 * 64);  // the largest gradient, dconv1
  grad_b = floats(b * 24 * 24 * 64);
  ones = floats(b * 24 * 24);  // rows of the largest bias gradient (conv1)

  // The ones vector never changes: fill it once, here, and wait, so that every stream
  // that later uses this Network sees it filled.
  std::unique_ptr<Stream> stream = device.create_stream();
  ops::fill(*stream, static_cast<int>(b * 24 * 24), 1.0f, ones.as<float>());
  stream->synchronize();
}

void Network::Impl::conv_forward(Stream& s, const float* x, Nhwc shape, const float* w,
                                 const float* bias, int out_channels, float* col, float* y) {
  // col[pixels, 5*5*in] = im2col(x); y[pixels, out] = relu(col w[5*5*in, out] + bias): the
  // four ops in one, tile by tile (ops_fast_host.hpp; on a GPU the same four kernels).
  ops::conv_forward_fast(s, x, shape, kKernel, w, bias, out_channels, col, y);
}

void Network::Impl::dense_forward(Stream& s, const float* x, int in, const float* w,
                                  const float* bias, int out, bool relu, float* y) {
  // y[B, out] = x[B, in] x w[in, out] + bias
  ops::gemm(s, false, false, batch_size, out, in, 1.0f, x, in, w, out, 0.0f, y, out);
  ops::bias_add(s, batch_size, out, bias, y);
  if (relu) ops::relu_forward(s, batch_size * out, y, y);
}

const float* ParamSource::acquire(int layer) const {
  if (layers_ != nullptr) return layers_->acquire(layer);
  const GradientLayer& range = gradient_layers()[static_cast<std::size_t>(layer)];
  if (range.offset < from_) {
    throw std::logic_error("Network: the parameters of " + range.name + " lie before the part "
                           "of the flat buffer it was given (from element " +
                           std::to_string(from_) + ")");
  }
  return flat_ + (range.offset - from_);
}

void ParamSource::release(int layer) const {
  if (layers_ != nullptr) layers_->release(layer);
}

const float* variable(const float* layer_params, int layer, const char* name) {
  return layer_params +
         (parameter(name).offset - gradient_layers()[static_cast<std::size_t>(layer)].offset);
}

int gradient_layer_index(int layer) {
  switch (layer) {
    case kConv1: return kConv1Layer;
    case kConv2: return kConv2Layer;
    case kLocal3: return kLocal3Layer;
    case kLocal4: return kLocal4Layer;
    case kSoftmaxLinear: return kSoftmaxLayer;
    default: return -1;
  }
}

void Network::Impl::forward_layer(Stream& s, int layer, const ParamSource& params,
                                  const float* images) {
  if (layer < 0 || layer >= kLayerCount) {
    throw std::out_of_range("Network has no layer " + std::to_string(layer));
  }
  // A layer with variables has them from just before its ops until just after (ZeRO-3
  // gathers them then; with one flat buffer this is the layer's range of it).
  const int k = gradient_layer_index(layer);
  const float* w = k >= 0 ? params.acquire(k) : nullptr;
  auto p = [w, k](const char* name) { return variable(w, k, name); };
  const int b = batch_size;
  const Nhwc in1{b, 24, 24, 3}, in2{b, 12, 12, 64};
  // Each layer's ops are traced under its name ("local3 gemm"), as TF's name scopes.
  s.set_scope(layer_names()[static_cast<std::size_t>(layer)].c_str());
  switch (layer) {
    case kConv1:
      conv_forward(s, images, in1, p("conv1/weights"), p("conv1/biases"), 64, col1.as<float>(),
                   conv1.as<float>());
      break;
    // Block 1: pool, then normalize.
    case kPool1:
      ops::max_pool_forward_fast(s, conv1.as<float>(), Nhwc{b, 24, 24, 64}, pool1.as<float>(),
                                 pool1_argmax.as<int>());
      break;
    case kNorm1:
      ops::lrn_forward(s, in2.pixels(), 64, kLrn, pool1.as<float>(), norm1.as<float>(),
                       norm1_scale.as<float>());
      break;
    case kConv2:
      conv_forward(s, norm1.as<float>(), in2, p("conv2/weights"), p("conv2/biases"), 64,
                   col2.as<float>(), conv2.as<float>());
      break;
    // Block 2: normalize, then pool.
    case kNorm2:
      ops::lrn_forward(s, in2.pixels(), 64, kLrn, conv2.as<float>(), norm2.as<float>(),
                       norm2_scale.as<float>());
      break;
    case kPool2:
      ops::max_pool_forward_fast(s, norm2.as<float>(), in2, pool2.as<float>(),
                                 pool2_argmax.as<int>());
      break;
    // pool2 [B, 6, 6, 64] is already [B, 2304] in (h, w, c) order: the reshape is free.
    case kLocal3:
      dense_forward(s, pool2.as<float>(), kFlat, p("local3/weights"), p("local3/biases"), 384,
                    true, local3.as<float>());
      break;
    case kLocal4:
      dense_forward(s, local3.as<float>(), 384, p("local4/weights"), p("local4/biases"), 192,
                    true, local4.as<float>());
      break;
    case kSoftmaxLinear:
      dense_forward(s, local4.as<float>(), 192, p("softmax_linear/weights"),
                    p("softmax_linear/biases"), data::kNumClasses, false, logits.as<float>());
      break;
    default:
      break;  // checked above
  }
  if (k >= 0) {
    // With parameters by layer, the weight decay is summed while the layer is held (ZeRO-3
    // drops it after use); only local3 and local4 have decayed variables.
    if (params.by_layer()) weight_decay_terms(s, k, w);
    params.release(k);
  }
  s.set_scope("");
}

void Network::Impl::inference(Stream& s, const ParamSource& params, const float* images) {
  // With parameters by layer, the weight decay starts from zero before its first term.
  if (params.by_layer()) ops::fill(s, 1, 0.0f, losses.as<float>() + kWeightDecay);
  for (int layer = 0; layer < kLayerCount; ++layer) forward_layer(s, layer, params, images);
}

void Network::Impl::weight_decay_terms(Stream& s, int layer, const float* layer_params) {
  const GradientLayer& range = gradient_layers()[static_cast<std::size_t>(layer)];
  float* l = losses.as<float>();
  for (const ParameterView& view : parameter_layout()) {
    if (view.weight_decay == 0.0f || view.offset < range.offset ||
        view.offset >= range.offset + range.count) {
      continue;
    }
    const float* w = layer_params + (view.offset - range.offset);
    ops::dot(s, static_cast<int>(view.count), w, w, scratch.as<float>());
    ops::axpy(s, 1, view.weight_decay / 2.0f, scratch.as<float>(), l + kWeightDecay);
  }
}

void Network::Impl::loss(Stream& s, const ParamSource* params, const int* labels) {
  s.set_scope("loss");
  float* l = losses.as<float>();
  // Mean cross-entropy: per-example losses summed by a dot with ones, then / B. The op
  // also leaves dlogits, the gradient of that mean, for the backward pass.
  ops::softmax_cross_entropy(s, batch_size, data::kNumClasses, logits.as<float>(), labels,
                             example_loss.as<float>(), dlogits.as<float>());
  ops::dot(s, batch_size, example_loss.as<float>(), ones.as<float>(), l + kCrossEntropy);
  ops::scal(s, 1, 1.0f / static_cast<float>(batch_size), l + kCrossEntropy);
  // Weight decay: sum over variables of wd * sum(w^2) / 2 (tf.nn.l2_loss), in buffer
  // order (layer by layer, inference() has summed it already, in the same order). None
  // without parameters: the caller holds the decayed weights elsewhere (chapter 10).
  if (params == nullptr) {
    ops::fill(s, 1, 0.0f, l + kWeightDecay);
  } else if (!params->by_layer()) {
    ops::fill(s, 1, 0.0f, l + kWeightDecay);
    for (int layer : {kConv1Layer, kConv2Layer, kLocal3Layer, kLocal4Layer, kSoftmaxLayer}) {
      weight_decay_terms(s, layer, params->acquire(layer));
    }
  }
  // total = cross-entropy + weight decay, left on the device.
  s.copy(l + kTotalLoss, l + kCrossEntropy, sizeof(float), "copy_loss");
  ops::axpy(s, 1, 1.0f, l + kWeightDecay, l + kTotalLoss);
  s.set_scope("");
}

// ---- Network: the public face, forwarding to Impl ----

Network::Network(Device& device, int batch_size) {
  if (batch_size <= 0) throw std::invalid_argument("Network: batch_size must be positive");
  if (batch_size > kMaxBatchSize) {
    throw std::invalid_argument(
        "Network: a batch of " + std::to_string(batch_size) + " images is more than the model "
        "supports per tower (" + std::to_string(kMaxBatchSize) + ": conv2's im2col matrix would "
        "pass 2^31 elements). Use a smaller --batch-size, or more towers for the same global batch.");
  }
  impl_ = std::make_unique<Impl>(device, batch_size);
}

Network::~Network() = default;

int Network::batch_size() const { return impl_->batch_size; }

void Network::forward(Stream& stream, const float* params, const float* images,
                      const int* labels) {
  const ParamSource flat(params);
  impl_->inference(stream, flat, images);
  impl_->loss(stream, &flat, labels);
}

void Network::forward_backward(Stream& stream, const float* params, const float* images,
                               const int* labels, float* grads) {
  forward(stream, params, images, labels);
  impl_->backward(stream, ParamSource(params), grads);
}

void Network::forward_backward(Stream& stream, const float* params, const float* images,
                               const int* labels, float* grads,
                               const LayerDone& layer_done) {
  forward(stream, params, images, labels);
  impl_->backward(stream, ParamSource(params), grads, layer_done);
}

void Network::forward_backward(Stream& stream, const LayerParams& params, const float* images,
                               const int* labels, float* grads) {
  const ParamSource by_layer(params);
  impl_->inference(stream, by_layer, images);
  impl_->loss(stream, &by_layer, labels);
  impl_->backward(stream, by_layer, grads);
}

void Network::predict(Stream& stream, const float* params, const float* images,
                      const int* labels) {
  impl_->inference(stream, ParamSource(params), images);
  ops::top1_correct(stream, impl_->batch_size, data::kNumClasses, impl_->logits.as<float>(),
                    labels, impl_->correct.as<float>());
  ops::dot(stream, impl_->batch_size, impl_->correct.as<float>(), impl_->ones.as<float>(),
           impl_->correct_count.as<float>());
}

const std::vector<std::string>& Network::layer_names() {
  static const std::vector<std::string> names = {"conv1", "pool1", "norm1", "conv2", "norm2",
                                                 "pool2", "local3", "local4", "softmax_linear"};
  return names;
}

int Network::layer_output_floats(int layer) {
  switch (layer) {
    case kConv1: return 24 * 24 * 64;
    case kPool1: case kNorm1: case kConv2: case kNorm2: return 12 * 12 * 64;
    case kPool2: return kFlat;
    case kLocal3: return 384;
    case kLocal4: return 192;
    case kSoftmaxLinear: return data::kNumClasses;
    default: throw std::out_of_range("Network has no layer " + std::to_string(layer));
  }
}

Buffer& Network::Impl::layer_output(int layer) {
  Buffer* outputs[] = {&conv1, &pool1, &norm1, &conv2, &norm2, &pool2, &local3, &local4, &logits};
  if (layer < 0 || layer >= kLayerCount) {
    throw std::out_of_range("Network has no layer " + std::to_string(layer));
  }
  return *outputs[layer];
}

void Network::forward_layers(Stream& stream, const float* params, int first, int last,
                             const float* images, std::size_t params_from) {
  if (first < 0 || first > last || last >= kLayerCount) {
    throw std::out_of_range("Network::forward_layers: no layers " + std::to_string(first) +
                            ".." + std::to_string(last));
  }
  // The same forward_layer() as forward() and the LayerParams pass run, so the same ops.
  const ParamSource flat(params, params_from);
  for (int layer = first; layer <= last; ++layer) {
    impl_->forward_layer(stream, layer, flat, images);
  }
}

void Network::loss(Stream& stream, const float* params, const int* labels) {
  const ParamSource flat(params);
  impl_->loss(stream, &flat, labels);
}

void Network::loss_without_decay(Stream& stream, const int* labels) {
  impl_->loss(stream, nullptr, labels);
}

void Network::backward_layers(Stream& stream, const float* params, int first, int last,
                              float* grads, std::size_t grads_from, std::size_t grads_count,
                              std::size_t params_from) {
  if (first < 0 || first > last || last >= kLayerCount) {
    throw std::out_of_range("Network::backward_layers: no layers " + std::to_string(first) +
                            ".." + std::to_string(last));
  }
  const ParamSource flat(params, params_from);
  for (int layer = last; layer >= first; --layer) {
    impl_->backward_layer(stream, layer, flat, GradientSpan{grads, grads_from, grads_count},
                          nullptr);
  }
}

float* Network::layer_output(int layer) { return impl_->layer_output(layer).as<float>(); }
float* Network::output_gradient(int layer) { return impl_->output_gradient(layer).as<float>(); }

const float* Network::losses() const { return impl_->losses.as<float>(); }
const float* Network::logits() const { return impl_->logits.as<float>(); }
const float* Network::correct_count() const { return impl_->correct_count.as<float>(); }

const std::vector<std::string>& Network::activation_names() {
  static const std::vector<std::string> names = {"conv1", "pool1", "norm1",  "conv2", "norm2",
                                                 "pool2", "local3", "local4", "logits"};
  return names;
}

double Network::multiply_adds_per_image() {
  // Each layer is a product y[rows, out] = x[rows, in] w[in, out] over `rows` output
  // pixels per image (1 for the dense layers), with in x out the weights' shape. Backward
  // computes dw = x^T dy and, except for conv1 (its input is the images), dx = dy w^T:
  // each as many multiply-adds as the forward product.
  struct Layer {
    const char* weights;
    int rows;
    bool input_gradient;
  };
  const Layer layers[] = {{"conv1/weights", 24 * 24, false},
                          {"conv2/weights", 12 * 12, true},
                          {"local3/weights", 1, true},
                          {"local4/weights", 1, true},
                          {"softmax_linear/weights", 1, true}};
  double total = 0;
  for (const Layer& layer : layers) {
    const ParameterView& view = parameter(layer.weights);
    const double out = view.shape.back();
    const double in = static_cast<double>(view.count) / out;  // 5 * 5 * channels for convs
    total += layer.rows * in * out * (layer.input_gradient ? 3 : 2);
  }
  return total;
}

const float* Network::activation(const std::string& name) const {
  const Impl& m = *impl_;
  const Buffer* buffers[] = {&m.conv1, &m.pool1, &m.norm1,  &m.conv2, &m.norm2,
                             &m.pool2, &m.local3, &m.local4, &m.logits};
  const std::vector<std::string>& names = activation_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return buffers[i]->as<float>();
  }
  throw std::out_of_range("Network has no activation named '" + name + "'");
}

}  // namespace towers::model

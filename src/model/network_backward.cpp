// SPDX-License-Identifier: MIT
// Network::Impl::backward: the gradient of the total loss with respect to every variable,
// layer by layer from the logits down to conv1, as tf.gradients would compute it.
//
// Activation gradients alternate between grad_a and grad_b (B = batch size):
//   dlogits [B, 10] -> dlocal4 [B, 192] (a) -> dlocal3 [B, 384] (b) -> dpool2 [B, 2304] (a)
//   -> dnorm2 (b) -> dconv2 (a) -> dnorm1 (b, through col2: on cuda dcol2 [B * 144, 1600],
//   on the host dconv2 zero-padded) -> dpool1 (a) -> dconv1 [B, 24, 24, 64] (b).
// No gradient is taken for the images.
//
// Each decayed layer gets its weight-decay term right after its own gemm, so its gradients
// are final as early as possible; layer_done (chapter 6) marks each layer then. The terms
// are the same axpys on the same values as when they ran together, so the bits are too.
#include <stdexcept>
#include <string>

#include "model/network_impl.hpp"
#include "model/parameters.hpp"

namespace towers::model {

void Network::Impl::weight_gradients(Stream& s, int rows, int in, int out, const float* x,
                                     const float* dy, float* dw, float* db) {
  // dw[in, out] = x[rows, in]^T dy[rows, out]
  ops::gemm(s, true, false, in, out, rows, 1.0f, x, in, dy, out, 0.0f, dw, out);
  // db[out] = dy[rows, out]^T ones[rows]: the bias gradient is a column sum.
  ops::gemv(s, true, rows, out, 1.0f, dy, out, ones.as<float>(), 0.0f, db);
}

void Network::Impl::input_gradient(Stream& s, int rows, int in, int out, const float* dy,
                                   const float* w, float* dx) {
  // dx[rows, in] = dy[rows, out] w[in, out]^T
  ops::gemm(s, false, true, rows, in, out, 1.0f, dy, out, w, out, 0.0f, dx, in);
}

void Network::Impl::conv_weight_gradients(Stream& s, Nhwc shape, const float* col,
                                          const float* dy, float* dw, float* db) {
  // dw[25 in, 64] = im2col(x)^T dy, from col as the forward pass left it (ops_fast_host.hpp)
  ops::conv_weight_grad_fast(s, shape, kKernel, dy, 64, col, dw);
  // db[64] = dy[pixels, 64]^T ones, as for the dense layers.
  ops::gemv(s, true, static_cast<int>(shape.pixels()), 64, 1.0f, dy, 64, ones.as<float>(), 0.0f,
            db);
}

Buffer& Network::Impl::output_gradient(int layer) {
  // The gradient of the logits is the loss's; after that they alternate, a then b.
  switch (layer) {
    case kSoftmaxLinear: return dlogits;
    case kLocal4: case kPool2: case kConv2: case kPool1: return grad_a;
    case kLocal3: case kNorm2: case kNorm1: case kConv1: return grad_b;
    default: throw std::out_of_range("Network has no layer " + std::to_string(layer));
  }
}

void Network::Impl::backward(Stream& s, const ParamSource& params, float* grads,
                             const LayerDone& layer_done) {
  // Layer k of gradient_layers() is enqueued: the caller may let other streams start on
  // it (chapter 6 records an event).
  int next_layer = 0;
  auto layer_enqueued = [&] {
    if (layer_done) layer_done(next_layer);
    ++next_layer;
  };
  for (int layer = kLayerCount - 1; layer >= 0; --layer) {
    backward_layer(s, layer, params, GradientSpan{grads, 0, kNumParameters}, layer_enqueued);
  }
}

void Network::Impl::backward_layer(Stream& s, int layer, const ParamSource& params,
                                   const GradientSpan& grads,
                                   const std::function<void()>& layer_enqueued) {
  if (layer < 0 || layer >= kLayerCount) {
    throw std::out_of_range("Network has no layer " + std::to_string(layer));
  }
  // The layer's variables are acquired when an op first reads them and released after its
  // last op. The weight and bias gradients (x^T dy, dy^T ones) do not read them, only the
  // input gradient (dy w^T) and the weight decay do, so those come first: with ZeRO-3 the
  // layer's gather then travels while they compute. The ops and their order are the same
  // as with one flat buffer, so are the bits. conv1's weights are not read at all: no
  // gradient is taken for the images, so ZeRO-3 need not gather them a second time.
  const int k = layer == kConv1 ? -1 : gradient_layer_index(layer);
  const float* w = nullptr;
  auto weights = [&] {
    if (w == nullptr) w = params.acquire(k);
    return w;
  };
  // A variable's values and its gradient, by TF name.
  auto p = [&](const char* name) { return variable(weights(), k, name); };
  // grads holds flat elements [from, from + count) (a bucket, ZeRO-2; or all of them).
  auto at = [&](const ParameterView& view) {
    if (view.offset < grads.from || view.offset + view.count > grads.from + grads.count) {
      throw std::logic_error("Network::backward_layer: " + view.name + " lies outside the "
                             "gradient buffer it was given");
    }
    return grads.data + (view.offset - grads.from);
  };
  auto g = [&](const char* name) { return at(parameter(name)); };

  // Weight decay adds wd * w to a decayed weight's gradient (d/dw of wd * w^2 / 2).
  auto add_weight_decay = [&](const char* name) {
    const ParameterView& view = parameter(name);
    ops::axpy(s, static_cast<int>(view.count), view.weight_decay, p(name), at(view));
  };
  auto done = [&] {
    if (layer_enqueued) layer_enqueued();
  };

  const int b = batch_size;
  float* ga = grad_a.as<float>();
  float* gb = grad_b.as<float>();
  const Nhwc shape2{b, 12, 12, 64};
  const Nhwc shape1{b, 24, 24, 64};

  // Ops are traced under the layer whose gradient they compute ("conv2 grad gemm").
  s.set_scope((layer_names()[static_cast<std::size_t>(layer)] + " grad").c_str());
  switch (layer) {
    case kSoftmaxLinear:  // logits = local4 w + b, no ReLU
      weight_gradients(s, b, 192, data::kNumClasses, local4.as<float>(), dlogits.as<float>(),
                       g("softmax_linear/weights"), g("softmax_linear/biases"));
      input_gradient(s, b, 192, data::kNumClasses, dlogits.as<float>(),
                     p("softmax_linear/weights"), ga);
      done();
      break;
    case kLocal4:  // local4 = relu(local3 w + b)
      ops::relu_backward(s, b * 192, local4.as<float>(), ga, ga);
      weight_gradients(s, b, 384, 192, local3.as<float>(), ga, g("local4/weights"),
                       g("local4/biases"));
      input_gradient(s, b, 384, 192, ga, p("local4/weights"), gb);
      add_weight_decay("local4/weights");
      done();
      break;
    case kLocal3:  // local3 = relu(pool2 w + b), pool2 seen as [B, 2304]
      ops::relu_backward(s, b * 384, local3.as<float>(), gb, gb);
      weight_gradients(s, b, kFlat, 384, pool2.as<float>(), gb, g("local3/weights"),
                       g("local3/biases"));
      input_gradient(s, b, kFlat, 384, gb, p("local3/weights"), ga);
      add_weight_decay("local3/weights");
      done();
      break;
    // Block 2 backward: pool2 then norm2, the reverse of norm2 -> pool2.
    case kPool2:
      ops::max_pool_backward_fast(s, ga, pool2_argmax.as<int>(), shape2, gb);  // dnorm2
      break;
    case kNorm2:
      ops::lrn_backward(s, shape2.pixels(), 64, kLrn, conv2.as<float>(), norm2.as<float>(),
                        norm2_scale.as<float>(), gb, ga);  // dconv2
      break;
    case kConv2: {
      ops::relu_backward(s, shape2.size(), conv2.as<float>(), ga, ga);
      // conv2 = im2col(norm1) w2: dw2 [1600, 64] = im2col(norm1)^T dconv2, from col2; then
      // dnorm1 = col2im(dconv2 w2^T), whose workspace overwrites col2, no longer needed once
      // dw2 has been computed (the stream keeps that order). ops_fast_host.hpp says how
      // each backend computes them.
      conv_weight_gradients(s, shape2, col2.as<float>(), ga, g("conv2/weights"),
                            g("conv2/biases"));
      done();  // conv2: dw2 and db2 are written; dnorm1 is not a variable's gradient
      ops::conv_input_grad_fast(s, ga, 64, p("conv2/weights"), shape2, kKernel,
                                col2.as<float>(), gb);  // dnorm1
      break;
    }
    // Block 1 backward: norm1 then pool1, the reverse of pool1 -> norm1.
    case kNorm1:
      ops::lrn_backward(s, shape2.pixels(), 64, kLrn, pool1.as<float>(), norm1.as<float>(),
                        norm1_scale.as<float>(), gb, ga);  // dpool1
      break;
    case kPool1:
      ops::max_pool_backward_fast(s, ga, pool1_argmax.as<int>(), shape1, gb);  // dconv1
      break;
    case kConv1:
      ops::relu_backward(s, shape1.size(), conv1.as<float>(), gb, gb);
      conv_weight_gradients(s, Nhwc{b, 24, 24, 3}, col1.as<float>(), gb, g("conv1/weights"),
                            g("conv1/biases"));
      done();
      break;
    default:
      break;  // checked above
  }
  if (w != nullptr) params.release(k);
  s.set_scope("");
}

}  // namespace towers::model

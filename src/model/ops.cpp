// SPDX-License-Identifier: MIT
// Each op: one Stream::launch with its host half and its cuda half. The lambdas capture
// pointers and sizes by value; they run later (host) or now (cuda), never both.
#include "model/ops.hpp"

#include "kernels/cuda/blas.hpp"
#include "kernels/cuda/kernels.hpp"
#include "kernels/host/blas.hpp"
#include "kernels/host/kernels.hpp"
#include "kernels/host/parallel.hpp"

namespace towers::ops {

using Ctx = CudaLaunchContext;

void set_host_op_threads(int threads) { host::set_op_threads(threads); }

void gemm(Stream& stream, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
          const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  stream.launch(
      "gemm",
      [=] { host::gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); },
      [=](const Ctx& x) {
        cuda::gemm(x, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      });
}

void gemv(Stream& stream, bool trans, int m, int n, float alpha, const float* a, int lda,
          const float* x, float beta, float* y) {
  stream.launch(
      "gemv", [=] { host::gemv(trans, m, n, alpha, a, lda, x, beta, y); },
      [=](const Ctx& c) { cuda::gemv(c, trans, m, n, alpha, a, lda, x, beta, y); });
}

void dot(Stream& stream, int n, const float* x, const float* y, float* result) {
  stream.launch(
      "dot", [=] { host::dot(n, x, y, result); },
      [=](const Ctx& c) { cuda::dot(c, n, x, y, result); });
}

void axpy(Stream& stream, int n, float alpha, const float* x, float* y) {
  stream.launch(
      "axpy", [=] { host::axpy(n, alpha, x, y); },
      [=](const Ctx& c) { cuda::axpy(c, n, alpha, x, y); });
}

void scal(Stream& stream, int n, float alpha, float* x) {
  stream.launch(
      "scal", [=] { host::scal(n, alpha, x); }, [=](const Ctx& c) { cuda::scal(c, n, alpha, x); });
}

void im2col(Stream& stream, const float* x, Nhwc s, int k, float* col) {
  stream.launch(
      "im2col", [=] { host::im2col(x, s, k, col); },
      [=](const Ctx& c) { cuda::im2col(c, x, s, k, col); });
}

void col2im(Stream& stream, const float* dcol, Nhwc s, int k, float* dx) {
  stream.launch(
      "col2im", [=] { host::col2im(dcol, s, k, dx); },
      [=](const Ctx& c) { cuda::col2im(c, dcol, s, k, dx); });
}

void bias_add(Stream& stream, int rows, int channels, const float* bias, float* y) {
  stream.launch(
      "bias_add", [=] { host::bias_add(rows, channels, bias, y); },
      [=](const Ctx& c) { cuda::bias_add(c, rows, channels, bias, y); });
}

void relu_forward(Stream& stream, int n, const float* x, float* y) {
  stream.launch(
      "relu", [=] { host::relu_forward(n, x, y); },
      [=](const Ctx& c) { cuda::relu_forward(c, n, x, y); });
}

void relu_backward(Stream& stream, int n, const float* y, const float* dy, float* dx) {
  stream.launch(
      "relu_grad", [=] { host::relu_backward(n, y, dy, dx); },
      [=](const Ctx& c) { cuda::relu_backward(c, n, y, dy, dx); });
}

void fill(Stream& stream, int n, float value, float* x) {
  stream.launch(
      "fill", [=] { host::fill(n, value, x); }, [=](const Ctx& c) { cuda::fill(c, n, value, x); });
}

void sgd_update(Stream& stream, int n, float learning_rate, const float* grad, float* w) {
  stream.launch(
      "sgd_update", [=] { host::sgd_update(n, learning_rate, grad, w); },
      [=](const Ctx& c) { cuda::sgd_update(c, n, learning_rate, grad, w); });
}

void ema_update(Stream& stream, int n, float decay, const float* var, float* shadow) {
  stream.launch(
      "ema_update", [=] { host::ema_update(n, decay, var, shadow); },
      [=](const Ctx& c) { cuda::ema_update(c, n, decay, var, shadow); });
}

void momentum_update(Stream& stream, int n, float learning_rate, float momentum,
                     const float* grad, float* velocity, float* w) {
  stream.launch(
      "momentum_update",
      [=] { host::momentum_update(n, learning_rate, momentum, grad, velocity, w); },
      [=](const Ctx& c) {
        cuda::momentum_update(c, n, learning_rate, momentum, grad, velocity, w);
      });
}

void adam_update(Stream& stream, int n, math::AdamScalars s, const float* grad, float* m,
                 float* v, float* w) {
  stream.launch(
      "adam_update", [=] { host::adam_update(n, s, grad, m, v, w); },
      [=](const Ctx& c) { cuda::adam_update(c, n, s, grad, m, v, w); });
}

void max_pool_forward(Stream& stream, const float* x, Nhwc in, float* y, int* argmax) {
  stream.launch(
      "max_pool", [=] { host::max_pool_forward(x, in, y, argmax); },
      [=](const Ctx& c) { cuda::max_pool_forward(c, x, in, y, argmax); });
}

void max_pool_backward(Stream& stream, const float* dy, const int* argmax, Nhwc in, float* dx) {
  stream.launch(
      "max_pool_grad", [=] { host::max_pool_backward(dy, argmax, in, dx); },
      [=](const Ctx& c) { cuda::max_pool_backward(c, dy, argmax, in, dx); });
}

void lrn_forward(Stream& stream, int pixels, int channels, LrnParams p, const float* x, float* y,
                 float* scale) {
  stream.launch(
      "lrn", [=] { host::lrn_forward(pixels, channels, p, x, y, scale); },
      [=](const Ctx& c) { cuda::lrn_forward(c, pixels, channels, p, x, y, scale); });
}

void lrn_backward(Stream& stream, int pixels, int channels, LrnParams p, const float* x,
                  const float* y, const float* scale, const float* dy, float* dx) {
  stream.launch(
      "lrn_grad", [=] { host::lrn_backward(pixels, channels, p, x, y, scale, dy, dx); },
      [=](const Ctx& c) { cuda::lrn_backward(c, pixels, channels, p, x, y, scale, dy, dx); });
}

void softmax_cross_entropy(Stream& stream, int batch, int classes, const float* logits,
                           const int* labels, float* loss, float* dlogits) {
  stream.launch(
      "softmax_xent",
      [=] { host::softmax_cross_entropy(batch, classes, logits, labels, loss, dlogits); },
      [=](const Ctx& c) {
        cuda::softmax_cross_entropy(c, batch, classes, logits, labels, loss, dlogits);
      });
}

void top1_correct(Stream& stream, int batch, int classes, const float* logits,
                  const int* labels, float* correct) {
  stream.launch(
      "top1_correct", [=] { host::top1_correct(batch, classes, logits, labels, correct); },
      [=](const Ctx& c) { cuda::top1_correct(c, batch, classes, logits, labels, correct); });
}

}  // namespace towers::ops

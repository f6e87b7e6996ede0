// SPDX-License-Identifier: MIT
// Ops: the CIFAR-10 model's building blocks, enqueued on a Stream of either backend.
//
// Each op is one Stream::launch: the host backend runs the host loop of kernels/host on
// the stream's worker thread, the cuda backend launches the matching kernel or cuBLAS
// call of kernels/cuda on the stream. Both compute every element with the same function
// of kernels/math. Like a kernel launch, an op returns before it has run: pointers are
// device memory of the stream's device and must stay valid until the stream has
// finished the op. Errors surface at the stream's next synchronize().
//
// Shapes: images are NHWC (math::Nhwc); matrices are row-major with explicit row strides
// (ld); sizes are int. A convolution is im2col + gemm, its backward gemm + col2im; the
// model (src/model) composes these. Introduced in chapter 1.
#pragma once

#include "kernels/math/conv.hpp"
#include "kernels/math/elementwise.hpp"
#include "kernels/math/lrn.hpp"
#include "kernels/math/pool.hpp"
#include "kernels/math/shape.hpp"
#include "runtime/stream.hpp"

namespace towers::ops {

using math::LrnParams;
using math::Nhwc;

/// How many threads one op may use on the host backend, for the whole process (see
/// kernels/host/parallel.hpp). The default, 1, gives each simulated device's stream one
/// core, so N devices use N cores and the trace shows their overlap honestly; a
/// single-device program may raise it. The cuda backend ignores it.
void set_host_op_threads(int threads);

// ---- Matrix products (CBLAS on host, cuBLAS on cuda) ----

/// c[m, n] = alpha * op(a) * op(b) + beta * c, all row-major; op(a) is [m, k], op(b) is
/// [k, n], op(x) = x^T when its flag is set; lda, ldb, ldc are the row strides as stored.
void gemm(Stream& stream, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
          const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);
/// y = alpha * op(a) * x + beta * y for row-major a[m, n]; with trans, y[n] = a^T x[m].
/// Bias gradients are db[C] = dy[rows, C]^T * ones[rows].
void gemv(Stream& stream, bool trans, int m, int n, float alpha, const float* a, int lda,
          const float* x, float beta, float* y);
/// result[0] = x[n] . y[n], written to device memory; dot(x, x) is a sum of squares.
void dot(Stream& stream, int n, const float* x, const float* y, float* result);
/// y[n] += alpha * x[n].
void axpy(Stream& stream, int n, float alpha, const float* x, float* y);
/// x[n] *= alpha.
void scal(Stream& stream, int n, float alpha, float* x);

// ---- Convolution pieces ----

/// col[pixels, math::im2col_columns(k, C)] = the k x k SAME patches of x (shape s), ordered
/// (kh, kw, c) like HWIO weights; then y = col x w[k*k*C, out] is the convolution.
void im2col(Stream& stream, const float* x, Nhwc s, int k, float* col);
/// dx (shape s) = the gradient of im2col: each element sums the dcol entries copied from it.
void col2im(Stream& stream, const float* dcol, Nhwc s, int k, float* dx);

// ---- Elementwise ----

/// y[rows, channels] += bias[channels], in place.
void bias_add(Stream& stream, int rows, int channels, const float* bias, float* y);
/// y[n] = max(x, 0); y may equal x.
void relu_forward(Stream& stream, int n, const float* x, float* y);
/// dx[n] = dy where the forward output y > 0, else 0; dx may equal dy.
void relu_backward(Stream& stream, int n, const float* y, const float* dy, float* dx);
/// x[n] = value (e.g. a ones vector for bias gradients and sums).
void fill(Stream& stream, int n, float value, float* x);
/// w[n] -= learning_rate * grad: one step of gradient descent, in place.
void sgd_update(Stream& stream, int n, float learning_rate, const float* grad, float* w);
/// shadow[n] -= (1 - decay) * (shadow - var): one moving-average update, in place.
void ema_update(Stream& stream, int n, float decay, const float* var, float* shadow);
/// velocity[n] = momentum * velocity + grad; w[n] -= learning_rate * velocity (in place).
void momentum_update(Stream& stream, int n, float learning_rate, float momentum,
                     const float* grad, float* velocity, float* w);
/// Adam: the moments m[n], v[n] and then w[n], in place (math::adam_step).
void adam_update(Stream& stream, int n, math::AdamScalars s, const float* grad, float* m,
                 float* v, float* w);

// ---- Pooling and normalization ----

/// Max pooling 3x3, stride 2, SAME of x (shape in) into y and argmax, both of shape
/// math::max_pool_output_shape(in); argmax holds the flat input index of each maximum.
void max_pool_forward(Stream& stream, const float* x, Nhwc in, float* y, int* argmax);
/// dx (shape in) from dy and the forward pass's argmax (shape max_pool_output_shape(in)).
void max_pool_backward(Stream& stream, const float* dy, const int* argmax, Nhwc in, float* dx);
/// LRN across channels of x[pixels, channels] into y, keeping scale[pixels, channels].
void lrn_forward(Stream& stream, int pixels, int channels, LrnParams p, const float* x, float* y,
                 float* scale);
/// dx[pixels, channels] of LRN, from the forward pass's x, y, scale and the gradient dy.
void lrn_backward(Stream& stream, int pixels, int channels, LrnParams p, const float* x,
                  const float* y, const float* scale, const float* dy, float* dx);

// ---- Loss and accuracy ----

/// Per-example cross-entropy loss[batch] of logits[batch, classes] against labels[batch],
/// and dlogits[batch, classes], the gradient of the batch *mean* of those losses.
void softmax_cross_entropy(Stream& stream, int batch, int classes, const float* logits,
                           const int* labels, float* loss, float* dlogits);
/// correct[batch] = 1 where the label's logit is a top-1 logit, else 0 (tf.nn.in_top_k).
void top1_correct(Stream& stream, int batch, int classes, const float* logits,
                  const int* labels, float* correct);

}  // namespace towers::ops

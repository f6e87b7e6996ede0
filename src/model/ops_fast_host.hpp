// SPDX-License-Identifier: MIT
// Faster host versions of the model's data-movement and convolution ops.
//
// The host loops of kernels/host compute every output element on its own, index
// arithmetic included, exactly as a CUDA thread does; that is what makes them the GPU's
// oracle. Two kinds of ops here do the same work in the order a CPU likes:
//
// - Max pooling, forward and backward: whole runs of channels at a time (channels are
//   contiguous in NHWC). Each output element receives the same value, added up in the
//   same order, so the results are identical to max_pool_forward and max_pool_backward
//   in ops.hpp; tests/model/ops_fast_host_test.cpp checks that bit for bit.
// - A convolution layer's three products in one op each, computed on the host without
//   the im2col matrix (implicit GEMM, kernels/host/implicit_conv.hpp): the only data they
//   move is a zero-padded copy of their input, into the layer's col buffer, which on the
//   host is that copy's workspace instead of an im2col matrix. Each output element is one
//   chain of fused multiply-adds in im2col's column order: not the bits of im2col + gemm
//   (whose BLAS adds long sums in blocks), but the same bits with any number of op
//   threads and with any of the host's vector widths. tests/model/conv_fused_host_test.cpp
//   compares them with the plain op sequences (ops.hpp) within a bound. On the cuda
//   backend each runs the plain sequence's kernels (im2col, cuBLAS, col2im), with col
//   holding im2col's matrix as before.
//
// Each host loop splits the batch into whole images over the op threads
// (kernels/host/parallel.hpp), the weight gradient the rows of its result; each element
// is computed the same way whatever the split, so the split changes no bit.
//
// Same contracts as their twins in ops.hpp: one Stream::launch each, enqueue only.
// Introduced in chapter 1.
#pragma once

#include "model/ops.hpp"

namespace towers::ops {

/// ops::max_pool_forward, with a host loop that compares whole runs of C channels: each
/// output visits its window's real cells in row-major order and keeps the first maximum,
/// as math::max_pool_forward does, so values and argmax are the same.
void max_pool_forward_fast(Stream& stream, const float* x, Nhwc in, float* y, int* argmax);

/// ops::max_pool_backward, with a host loop that zeroes dx and scatters each dy[o] to
/// dx[argmax[o]] in increasing o: every input sums its outputs in the order the gather
/// of math::max_pool_backward visits them.
void max_pool_backward_fast(Stream& stream, const float* dy, const int* argmax, Nhwc in,
                            float* dx);

/// The forward pass of a SAME convolution layer (k x k, odd k) in one op: y[pixels, out]
/// = relu(im2col(x) w[k*k*C, out] + bias), x of shape s. On the host col[pixels, k*k*C] is
/// the workspace: it receives x zero-padded (k/2 on every side, [batch, height + k - 1,
/// width + k - 1, C]), which conv_weight_grad_fast reads later, and the product reads its
/// taps from there (implicit GEMM). On the cuda backend: ops::im2col into col, gemm,
/// bias_add and relu_forward, col then holding im2col(x).
void conv_forward_fast(Stream& stream, const float* x, Nhwc s, int k, const float* w,
                       const float* bias, int out_channels, float* col, float* y);

/// The weight gradient of that layer: dw[k*k*C, out] = im2col(x)^T dy, dy [pixels, out],
/// from what conv_forward_fast left in col (the host: x zero-padded, read in place; cuda:
/// im2col(x), a gemm). On the host its rows split over the op threads, each summing every
/// image in order. Traced as "gemm": it is the layer's weight product.
void conv_weight_grad_fast(Stream& stream, Nhwc s, int k, const float* dy, int out_channels,
                           const float* col, float* dw);

/// The input gradient of that layer: dx (shape s) = col2im(dy[pixels, out] w^T). On the
/// host, the forward convolution of dy, zero-padded into dcol, with the weights turned by
/// 180 degrees (implicit GEMM, no col2im); on cuda, dcol = dy w^T and col2im. dcol may be
/// the forward pass's col once the weight gradient has read it: either way it is
/// overwritten.
void conv_input_grad_fast(Stream& stream, const float* dy, int out_channels, const float* w,
                          Nhwc s, int k, float* dcol, float* dx);

}  // namespace towers::ops

// SPDX-License-Identifier: MIT
// Implicit GEMM: a SAME convolution's three products computed straight from the image,
// without an im2col matrix.
//
// im2col + sgemm writes every input pixel k*k times into a matrix (conv2's is 118 MB at
// batch 128), only for the product to read it back. But row (n, oy, ox) of that matrix
// is, kernel row by kernel row, k*C floats that already lie side by side in a zero-padded
// copy of the image (NHWC: a kernel row's taps are neighbouring pixels, each pixel's
// channels contiguous). So the product can read its left operand from the padded image
// directly: the padded copy (x plus a border of k/2 zeros) is the only data moved, about
// 1.8 times the input instead of k*k = 25 times it.
//
// The three products of a layer y = conv(x, w) (w: [k*k*C, out], rows in im2col's order
// (kh, kw, c)) all take this form:
//   forward       y[p, o]         = sum over (kh, kw, c)  x_pad[p + tap] w[(kh, kw, c), o]
//   input grad    dx[p, c]        = sum over (kh, kw, o)  dy_pad[p + tap] w_flip[(kh, kw, o), c]
//                 (a forward pass of dy with the weights turned by 180 degrees, in and out
//                 swapped: conv_flip_weights)
//   weight grad   dw[(kh, kw, c), o] = sum over n, then pixels p  x_pad[p + tap] dy[p, o]
// Each output element is one chain of fused multiply-adds, acc = fma(a, b, acc), over its
// sum in the order written above, from 0 (the weight gradient: from 0 at the first image,
// then on from where the previous image left it). Vector width, blocking and threads only
// decide which elements are computed together, never that order, so the result is the
// same bits with AVX-512, AVX2 (with FMA) or the portable loop (std::fma), and with any
// number of op threads; tests/ops/implicit_conv_test.cpp checks all three. It is another
// order than OpenBLAS's (which splits long sums into blocks), so it is compared with
// im2col + gemm within a bound, not bit for bit. The plain im2col, col2im and gemm ops
// stay as the readable reference and as the CUDA path.
//
// The vector kernels hold a block of up to 6 output rows by 64 columns in registers (24
// AVX-512 registers; AVX2 does 16 columns at a time) and read each step's weight row once
// for all of them. They run where the number of output columns is a multiple of 16
// (AVX-512) or 8 (AVX2), as in the model (64); other shapes, and CPUs without those
// instructions, take the portable loop.
#pragma once

#include "kernels/math/shape.hpp"

namespace towers::host {

/// Which loop computes the implicit products.
enum class ConvIsa { kPortable, kAvx2, kAvx512 };

/// The widest ConvIsa this CPU runs (kPortable elsewhere than x86-64).
ConvIsa best_conv_isa();

/// The ConvIsa the products use: best_conv_isa() unless set_conv_isa chose another.
ConvIsa conv_isa();

/// Makes the products use `isa` (for tests, which compare the loops bit for bit); one
/// the CPU lacks is not taken (conv_isa() stays). Not thread-safe with running products.
void set_conv_isa(ConvIsa isa);

/// x_pad: images [n0, n1) of x (shape s) with a border of `pad` zeros on every side, laid
/// out as the whole batch's [batch, height + 2 pad, width + 2 pad, channels].
void conv_pad(const float* x, math::Nhwc s, int pad, float* x_pad, int n0, int n1);

/// w_flip[(kh, kw, o), c] = w[(k-1-kh, k-1-kw, c), o] for w of [k*k*in, out]: the
/// weights of the input gradient as a forward convolution of the output gradient.
void conv_flip_weights(const float* w, int k, int in, int out, float* w_flip);

/// Forward SAME convolution of images [n0, n1) from x_pad (conv_pad of x, shape s, pad
/// k/2) with w [k*k*s.channels, out]: y [pixels, out] (rows of the whole batch). With a
/// `bias` (else nullptr), y = max(sum + bias, 0): the layer's bias and ReLU.
void conv_forward_implicit(const float* x_pad, math::Nhwc s, int k, const float* w, int out,
                           const float* bias, float* y, int n0, int n1);

/// Rows [r0, r1) of the weight gradient dw [k*k*s.channels, out] = im2col(x)^T dy, from
/// x_pad (conv_pad of x, pad k/2) and dy [pixels, out], summed over every image of the
/// batch in order. Rows split over threads give the same bits as one call for all.
void conv_weight_grad_implicit(const float* x_pad, math::Nhwc s, int k, const float* dy,
                               int out, float* dw, int r0, int r1);

}  // namespace towers::host

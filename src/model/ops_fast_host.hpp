// SPDX-License-Identifier: MIT
// Faster host loops for four data-movement ops, with the same results bit for bit; and
// two fused convolution ops (at the end) that run a layer's passes tile by tile.
//
// The host loops of kernels/host compute every output element on its own, index
// arithmetic included, exactly as a CUDA thread does; that is what makes them the GPU's
// oracle, and on the CPU it makes im2col, col2im and the pooling gradient cost more than
// all the matrix products of a step. The ops here do the same work in the order a CPU
// likes: whole runs of channels at a time (channels are contiguous in NHWC). Each output
// element still receives the same value, added up in the same order, so the results are
// identical to the ops in ops.hpp; tests/model/ops_fast_host_test.cpp checks that bit for
// bit. On the cuda backend each launches the very kernel of its ops.hpp twin.
//
// Each host loop splits the batch into whole images over the op threads
// (kernels/host/parallel.hpp); an image's outputs depend only on that image, so the
// split changes no bit.
//
// Same contracts as their twins in ops.hpp: one Stream::launch each, enqueue only.
// Introduced in chapter 1.
#pragma once

#include "model/ops.hpp"

namespace towers::ops {

/// ops::im2col, with a host loop that copies (or zero-fills) one run of C channels per
/// kernel tap: col[pixels, k*k*C] from x of shape s.
void im2col_fast(Stream& stream, const float* x, Nhwc s, int k, float* col);

/// ops::col2im, with a host loop that adds whole runs of C channels: dx (shape s) from
/// dcol[pixels, k*k*C], each element summed over kernel rows, then columns, as col2im.
void col2im_fast(Stream& stream, const float* dcol, Nhwc s, int k, float* dx);

/// ops::max_pool_forward, with a host loop that compares whole runs of C channels: each
/// output visits its window's real cells in row-major order and keeps the first maximum,
/// as math::max_pool_forward does, so values and argmax are the same.
void max_pool_forward_fast(Stream& stream, const float* x, Nhwc in, float* y, int* argmax);

/// ops::max_pool_backward, with a host loop that zeroes dx and scatters each dy[o] to
/// dx[argmax[o]] in increasing o: every input sums its outputs in the order the gather
/// of math::max_pool_backward visits them.
void max_pool_backward_fast(Stream& stream, const float* dy, const int* argmax, Nhwc in,
                            float* dx);

/// The forward pass of a 5x5 SAME convolution layer in one op: im2col_fast(x) into
/// col[pixels, k*k*C], y[pixels, out] = col w[k*k*C, out], ops::bias_add, ops::relu_forward.
/// The plain sequence makes four passes over the batch, each reading from memory what the
/// last one wrote (col2 alone is 118 MB at batch 128). The host loop here makes them tile
/// by tile, a few images at a time (kConvTileBytes of col), so each tile's col is still in
/// cache for its product and y for the bias and ReLU. col is still filled whole: the
/// backward pass needs it. Tiles lie at fixed image indices and are split over the op
/// threads, each tile a single-threaded product, so results do not depend on the thread
/// count; each element of y gets the same bias add and ReLU as the plain ops, and the
/// products differ from the plain op's whole-batch product at most where the BLAS picks
/// another kernel for fewer rows (tests/model/conv_fused_host_test.cpp compares them).
/// On the cuda backend: the plain sequence's four kernels.
void conv_forward_fast(Stream& stream, const float* x, Nhwc s, int k, const float* w,
                       const float* bias, int out_channels, float* col, float* y);

/// The input gradient of a convolution layer in one op: dcol[pixels, k*k*C] = dy[pixels,
/// out] w^T, then col2im_fast(dcol) into dx (shape s); dcol may be the forward pass's col
/// once the weight gradient has read it. Tiled as conv_forward_fast, so each tile's dcol
/// is summed into dx while still in cache; col2im_fast's sums, in its order.
void conv_input_grad_fast(Stream& stream, const float* dy, int out_channels, const float* w,
                          Nhwc s, int k, float* dcol, float* dx);

}  // namespace towers::ops

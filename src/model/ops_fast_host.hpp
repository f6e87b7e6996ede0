// SPDX-License-Identifier: MIT
// Faster host loops for four data-movement ops, with the same results bit for bit.
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

}  // namespace towers::ops

// SPDX-License-Identifier: MIT
// Exercise 11 — reference solution.
#include <algorithm>
#include <vector>

#include "tensor_parallel.hpp"

namespace towers::exercises {

Shard feature_shard(int features, int ranks, int rank) {
  const int base = features / ranks, longer = features % ranks;
  // Before chunk r lie r chunks of `base` features, min(r, longer) of them one longer.
  return Shard{rank * base + std::min(rank, longer), base + (rank < longer ? 1 : 0)};
}

void tensor_forward(AllReduce& g, std::span<const TensorRank> ranks, const Dims& d,
                    const float* x) {
  const int t = static_cast<int>(ranks.size());
  std::vector<float*> partials;
  for (int r = 0; r < t; ++r) {
    const TensorRank& rank = ranks[static_cast<std::size_t>(r)];
    const int c = feature_shard(d.hidden, t, r).size;
    // The column layer: the rank's columns of h, each a whole dot product.
    matmul(d.batch, c, d.inputs, x, d.inputs, rank.w1, c, rank.h, c);
    add_bias_relu(d.batch, c, rank.b1, rank.h);
    // The row layer: the rank's part of the sum over the hidden features. No bias yet.
    matmul(d.batch, d.outputs, c, rank.h, c, rank.w2, d.outputs, rank.y, d.outputs);
    partials.push_back(rank.y);
  }
  // g: every rank's partial sums, added up; then the bias, once, and the ReLU.
  g.all_reduce_sum(partials, static_cast<std::size_t>(d.batch) * d.outputs);
  for (const TensorRank& rank : ranks) add_bias_relu(d.batch, d.outputs, rank.b2, rank.y);
}

void tensor_backward(AllReduce& f, std::span<const TensorRank> ranks, const Dims& d,
                     const float* x, const float* dy) {
  const int t = static_cast<int>(ranks.size());
  std::vector<float*> partials;
  for (int r = 0; r < t; ++r) {
    const TensorRank& rank = ranks[static_cast<std::size_t>(r)];
    const int c = feature_shard(d.hidden, t, r).size;
    // dz: the same on every rank, which holds y whole: g's backward moves nothing.
    relu_backward(d.batch * d.outputs, rank.y, dy, rank.dz);
    column_sums(d.batch, d.outputs, rank.dz, rank.db2);
    matmul_at(c, d.outputs, d.batch, rank.h, c, rank.dz, d.outputs, rank.dw2, d.outputs);
    matmul_bt(d.batch, c, d.outputs, rank.dz, d.outputs, rank.w2, d.outputs, rank.dh, c);
    relu_backward(d.batch * c, rank.h, rank.dh, rank.dh);
    matmul_at(d.inputs, c, d.batch, x, d.inputs, rank.dh, c, rank.dw1, c);
    column_sums(d.batch, c, rank.dh, rank.db1);
    // The rank's part of x's gradient, a sum over its hidden features.
    matmul_bt(d.batch, d.inputs, c, rank.dh, c, rank.w1, c, rank.dx, d.inputs);
    partials.push_back(rank.dx);
  }
  // f: the parts added up, on every rank.
  f.all_reduce_sum(partials, static_cast<std::size_t>(d.batch) * d.inputs);
}

void gather_columns(std::span<const float* const> shards, int rows, int features, float* whole) {
  const int t = static_cast<int>(shards.size());
  for (int r = 0; r < t; ++r) {
    const Shard s = feature_shard(features, t, r);
    for (int i = 0; i < rows; ++i) {
      std::copy_n(shards[static_cast<std::size_t>(r)] + i * s.size, s.size,
                  whole + i * features + s.offset);
    }
  }
}

}  // namespace towers::exercises

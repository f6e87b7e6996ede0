// SPDX-License-Identifier: MIT
// Exercise 11 — your code goes here. See README.md and tensor_parallel.hpp.
#include "tensor_parallel.hpp"

#include "exercises/todo.hpp"

namespace towers::exercises {

Shard feature_shard(int features, int ranks, int rank) {
  // TODO(1): chunk `rank` of `features` cut `ranks` ways: features / ranks each, one more
  //   for each of the first features % ranks chunks. Where does chunk r start?
  (void)features;
  (void)ranks;
  (void)rank;
  todo("exercise 11: write feature_shard() in exercises/11_tensor_parallel/stub.cpp");
}

void tensor_forward(AllReduce& g, std::span<const TensorRank> ranks, const Dims& dims,
                    const float* x) {
  // TODO(2): for every rank: its columns of h (matmul, then add_bias_relu with its b1),
  //   then its partial sums of z into rank.y (matmul with its rows of W2; no bias yet).
  // TODO(3): g: one all_reduce_sum of every rank's y, in rank order.
  // TODO(4): on every rank, the bias b2 and the ReLU on the whole sum.
  (void)g;
  (void)ranks;
  (void)dims;
  (void)x;
  todo("exercise 11: write tensor_forward() in exercises/11_tensor_parallel/stub.cpp");
}

void tensor_backward(AllReduce& f, std::span<const TensorRank> ranks, const Dims& dims,
                     const float* x, const float* dy) {
  // TODO(5): for every rank: dz (relu_backward of y), db2 (column sums of dz), dW2 = h^T dz,
  //   dh = (dz W2_r^T) where h > 0, dW1 = x^T dh, db1 (column sums of dh), and its part of
  //   dx = dh W1_r^T. Which of these needs the other ranks?
  // TODO(6): f: one all_reduce_sum of every rank's dx, in rank order.
  (void)f;
  (void)ranks;
  (void)dims;
  (void)x;
  (void)dy;
  todo("exercise 11: write tensor_backward() in exercises/11_tensor_parallel/stub.cpp");
}

void gather_columns(std::span<const float* const> shards, int rows, int features, float* whole) {
  // TODO(7): rank r's shard [rows, c_r] goes to columns feature_shard(features, t, r) of
  //   every row of whole [rows, features].
  (void)shards;
  (void)rows;
  (void)features;
  (void)whole;
  todo("exercise 11: write gather_columns() in exercises/11_tensor_parallel/stub.cpp");
}

}  // namespace towers::exercises

// SPDX-License-Identifier: MIT
// Exercise 11: Megatron's f and g (chapter 10).
//
// Two layers, x [batch, inputs] -> h [batch, hidden] -> y [batch, outputs], like chapter
// 10's local3 and local4:
//
//   h = relu(x W1 + b1)       W1 [inputs, hidden], b1 [hidden]
//   y = relu(h W2 + b2)       W2 [hidden, outputs], b2 [outputs]
//
// are split over t ranks along `hidden`. Rank r owns a contiguous range of the hidden
// features, feature_shard(hidden, t, r): those columns of W1 and entries of b1 (a column
// split) and those rows of W2 (a row split). b2 is not split: every rank holds it whole.
//
// Forward (every rank holds the same x):
//   h_r = relu(x W1_r + b1_r)           the rank's columns of h: whole dot products, no
//                                       communication (f is the identity forward);
//   z_r = h_r W2_r                      a partial sum: z = z_0 + z_1 + ... + z_(t-1);
//   g: all-reduce (sum) of z_r          every rank then holds z, whole;
//   y = relu(z + b2)                    the bias once, after the sum.
// Backward (every rank holds the same dy = dLoss/dy):
//   dz = dy where y > 0                 the same on every rank (g is the identity backward);
//   dW2_r = h_r^T dz, db2 = column sums of dz, dh_r = (dz W2_r^T) where h_r > 0;
//   dW1_r = x^T dh_r, db1_r = column sums of dh_r;
//   dx_r = dh_r W1_r^T                  a partial sum again;
//   f: all-reduce (sum) of dx_r         every rank then holds dx, whole.
//
// The grader supplies the all-reduce and watches it: which buffers it is given, how many
// floats, and what they hold when it is called. You also write gather_columns(), which
// puts the ranks' column shards of a matrix back together (a checkpoint does this with
// W1; chapter 10's TensorSlices::put_together).
#pragma once

#include <cstddef>
#include <span>

namespace towers::exercises {

/// A rank's range of the hidden features: [offset, offset + size).
struct Shard {
  int offset = 0;  ///< first feature
  int size = 0;    ///< how many; 0 when the rank owns none (hidden < ranks)
};

/// The features rank `rank` (0..ranks-1) owns of `features`: chunk `rank` of the ring's
/// cut (chapter 4), contiguous, in rank order, the first features % ranks chunks one
/// feature longer than the others (features / ranks).
Shard feature_shard(int features, int ranks, int rank);

/// The all-reduce, supplied by the grader.
class AllReduce {
 public:
  virtual ~AllReduce() = default;
  /// buffers[r] (every rank's, in rank order, `count` floats each): afterwards every
  /// buffer holds the element-wise SUM of all of them.
  virtual void all_reduce_sum(std::span<float* const> buffers, std::size_t count) = 0;
};

/// The shape of the pair.
struct Dims {
  int batch = 0;    ///< rows of x
  int inputs = 0;   ///< features of x
  int hidden = 0;   ///< features of h: the ones split over the ranks
  int outputs = 0;  ///< features of y
};

/// What one rank holds (c = its feature_shard(hidden, t, r).size). Row-major throughout.
struct TensorRank {
  // The rank's parameters.
  const float* w1 = nullptr;  ///< [inputs, c]: its columns of W1, row by row
  const float* b1 = nullptr;  ///< [c]: its entries of b1
  const float* w2 = nullptr;  ///< [c, outputs]: its rows of W2
  const float* b2 = nullptr;  ///< [outputs]: b2, whole
  // Activations, written by tensor_forward(), read by tensor_backward().
  float* h = nullptr;  ///< [batch, c]: its columns of h
  float* y = nullptr;  ///< [batch, outputs]: z_r, then (after g) y
  // Gradients, written by tensor_backward().
  float* dx = nullptr;   ///< [batch, inputs]: dx_r, then (after f) dx
  float* dw1 = nullptr;  ///< [inputs, c]
  float* db1 = nullptr;  ///< [c]
  float* dw2 = nullptr;  ///< [c, outputs]
  float* db2 = nullptr;  ///< [outputs]
  float* dh = nullptr;   ///< [batch, c]: scratch for dh_r
  float* dz = nullptr;   ///< [batch, outputs]: scratch for dz
};

/// The forward pass of ranks.size() ranks on x [batch, inputs] (the same for every rank),
/// with g: writes every rank's h and y.
void tensor_forward(AllReduce& g, std::span<const TensorRank> ranks, const Dims& dims,
                    const float* x);

/// The backward pass, after tensor_forward(), from dy [batch, outputs] (the same for every
/// rank), with f: writes every rank's dx (whole, after f), dw1, db1, dw2, db2.
void tensor_backward(AllReduce& f, std::span<const TensorRank> ranks, const Dims& dims,
                     const float* x, const float* dy);

/// Puts a matrix [rows, features] back together from its column shards: shards[r] holds
/// rank r's columns feature_shard(features, ranks.size(), r), [rows, c_r] row by row.
/// Writes whole [rows, features].
void gather_columns(std::span<const float* const> shards, int rows, int features, float* whole);

// ---- Helpers: use them (the grader's oracle does) ----------------------------------------

/// c[m, n] = a[m, k] b[k, n]; lda, ldb, ldc are the row lengths as stored.
inline void matmul(int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                   float* c, int ldc) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float sum = 0;
      for (int p = 0; p < k; ++p) sum += a[i * lda + p] * b[p * ldb + j];
      c[i * ldc + j] = sum;
    }
  }
}

/// c[m, n] = a[m, k] b[n, k]^T (b stored [n, k]).
inline void matmul_bt(int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                      float* c, int ldc) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float sum = 0;
      for (int p = 0; p < k; ++p) sum += a[i * lda + p] * b[j * ldb + p];
      c[i * ldc + j] = sum;
    }
  }
}

/// c[m, n] = a[k, m]^T b[k, n] (a stored [k, m]).
inline void matmul_at(int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                      float* c, int ldc) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float sum = 0;
      for (int p = 0; p < k; ++p) sum += a[p * lda + i] * b[p * ldb + j];
      c[i * ldc + j] = sum;
    }
  }
}

/// y[rows, n] = relu(y + bias[n]), in place.
inline void add_bias_relu(int rows, int n, const float* bias, float* y) {
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < n; ++j) {
      const float v = y[i * n + j] + bias[j];
      y[i * n + j] = v > 0 ? v : 0.0f;
    }
  }
}

/// dx[n] = dy[n] where y[n] > 0, else 0 (ReLU's backward; dx may be dy).
inline void relu_backward(int n, const float* y, const float* dy, float* dx) {
  for (int i = 0; i < n; ++i) dx[i] = y[i] > 0 ? dy[i] : 0.0f;
}

/// sums[n] = the column sums of a[rows, n] (a bias's gradient).
inline void column_sums(int rows, int n, const float* a, float* sums) {
  for (int j = 0; j < n; ++j) {
    float sum = 0;
    for (int i = 0; i < rows; ++i) sum += a[i * n + j];
    sums[j] = sum;
  }
}

}  // namespace towers::exercises

// SPDX-License-Identifier: MIT
// Chapter 10's closed forms: bytes on the wire per step, and the model state one rank
// holds, for tensor parallelism and the hybrid, beside chapter 4's data parallelism.
//
// Wire. A ring all-reduce of C floats over n devices moves 2(n-1) C floats in all: each
// of its n chunks crosses n-1 links in the reduce-scatter and n-1 in the all-gather,
// whatever the chunk sizes. Its halves move (n-1) C each. All ranks together, per step:
//
//   tensor parallel, t ranks, batch b   g: all-reduce of b x 192, f: of b x 2304
//                                       2(t-1) b (192 + 2304)             = 2(t-1) b 2496
//   hybrid, N towers of b               all-gather of pool2 and reduce-scatter of its
//                                       gradient, N b x 2304 each; reduce-scatter of
//                                       local4's sums and all-gather of their gradient,
//                                       N b x 192 each; the replicated all-reduce
//                                       2(N-1) N b 2496 + 2(N-1) 109,450
//   data parallel (chapter 4), N        2(N-1) 1,068,298
//
// Per device, divide by t or N: 2(t-1)/t b 2496; 2(N-1) b 2496 + 2(N-1)/N 109,450;
// 2(N-1)/N 1,068,298. The hybrid's activations grow with b and N, data parallelism's
// gradients do not: at N = 2 the hybrid moves fewer bytes up to b = 192 and more from
// b = 193 on (1,067,914 and 1,072,906 floats per device against 1,068,298).
//
// Memory. Rank r of t keeps replicated + 2,497 c_r floats of each of parameters,
// gradients and moving averages (TensorSliceLayout), c_r = its share of local3's 384
// columns: 1/t of chapter 4's local3 and local4 (all but local4's 192 biases) when t
// divides 384. Integers throughout, so the tests compare them exactly.
#pragma once

#include <cstdint>

namespace towers {

/// local3's inputs (pool2 flattened) and local4's outputs: the widths of f's and g's rows.
inline constexpr std::int64_t kTensorInputWidth = 2304;
/// local4's outputs.
inline constexpr std::int64_t kTensorOutputWidth = 192;
/// The parameters the hybrid keeps replicated: conv1, conv2, local4's biases, softmax_linear.
inline constexpr std::int64_t kReplicatedParameters = 109450;
/// Every parameter of the model (model::kNumParameters).
inline constexpr std::int64_t kModelParameters = 1068298;

/// Floats all t ranks send per step under tensor parallelism with batch b: g and f.
constexpr std::int64_t tensor_wire_floats(int t, int b) {
  return 2 * std::int64_t{t - 1} * b * (kTensorOutputWidth + kTensorInputWidth);
}

/// Floats all N towers send per step under the hybrid with b images each: the rows of the
/// FC pair's inputs and outputs, gathered and scattered, and the replicated all-reduce.
constexpr std::int64_t hybrid_wire_floats(int n, int b) {
  const std::int64_t others = n - 1;
  return 2 * others * n * b * (kTensorOutputWidth + kTensorInputWidth) +
         2 * others * kReplicatedParameters;
}

/// Floats all N towers send per step under data parallelism (chapter 4's all-reduce).
constexpr std::int64_t data_parallel_wire_floats(int n) {
  return 2 * std::int64_t{n - 1} * kModelParameters;
}

}  // namespace towers

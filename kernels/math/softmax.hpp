// SPDX-License-Identifier: MIT
// Softmax cross-entropy with sparse labels, and top-1 correctness.
//
// One call handles one example: a row of logits[batch, classes] and its label. The loss
// is computed stably, subtracting the row's maximum before exponentiating:
//
//   loss = log(sum_j exp(l_j - m)) - (l_label - m),   m = max_j l_j
//
// and the gradient of the *batch mean* of the losses (tf.reduce_mean in cifar10.py) is
//
//   dlogits[j] = (softmax(l)_j - [j == label]) / batch.
//
// Summing the per-example losses is left to BLAS (a dot product with a ones vector).
#pragma once

#include <math.h>

#include "kernels/common.hpp"

namespace towers::math {

/// Example `b`: writes loss[b] (its cross-entropy) and row b of dlogits[batch, classes]
/// (the gradient of the batch-mean loss). labels[b] must lie in [0, classes).
TOWERS_HD inline void softmax_cross_entropy(int b, const float* logits, const int* labels,
                                            int batch, int classes, float* loss,
                                            float* dlogits) {
  const float* l = logits + b * classes;
  float* d = dlogits + b * classes;
  float m = l[0];
  for (int j = 1; j < classes; ++j) m = l[j] > m ? l[j] : m;
  float sum = 0.0f;
  for (int j = 0; j < classes; ++j) sum += expf(l[j] - m);
  const int label = labels[b];
  loss[b] = logf(sum) - (l[label] - m);
  for (int j = 0; j < classes; ++j) {
    const float p = expf(l[j] - m) / sum;
    d[j] = (p - (j == label ? 1.0f : 0.0f)) / static_cast<float>(batch);
  }
}

/// 1 when example `b`'s label is among its top-1 logits, else 0, as tf.nn.in_top_k(k = 1):
/// the label counts as correct unless some logit is strictly larger than its own.
TOWERS_HD inline float top1_correct(int b, const float* logits, const int* labels, int classes) {
  const float* l = logits + b * classes;
  const float target = l[labels[b]];
  for (int j = 0; j < classes; ++j) {
    if (l[j] > target) return 0.0f;
  }
  return 1.0f;
}

}  // namespace towers::math

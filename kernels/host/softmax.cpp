// SPDX-License-Identifier: MIT
// Host loops for softmax cross-entropy and top-1 correctness (kernels/math/softmax.hpp).
#include "kernels/host/kernels.hpp"
#include "kernels/math/softmax.hpp"

namespace towers::host {

void softmax_cross_entropy(int batch, int classes, const float* logits, const int* labels,
                           float* loss, float* dlogits) {
  for (int b = 0; b < batch; ++b) {  // one example per iteration
    math::softmax_cross_entropy(b, logits, labels, batch, classes, loss, dlogits);
  }
}

void top1_correct(int batch, int classes, const float* logits, const int* labels,
                  float* correct) {
  for (int b = 0; b < batch; ++b) correct[b] = math::top1_correct(b, logits, labels, classes);
}

}  // namespace towers::host

// SPDX-License-Identifier: MIT
// mutant: the steady state runs the backward of the micro-batch it just forwarded (F k, B k) instead of the oldest one stashed, leaving the warm-up's for the cool-down
#include <algorithm>

#include "one_f_one_b.hpp"

namespace towers::exercises {

std::vector<StageOp> one_f_one_b(int stages, int micro_batches, int stage) {
  const int warmup = std::min(stages - stage - 1, micro_batches);
  std::vector<StageOp> ops;
  for (int k = 0; k < warmup; ++k) ops.push_back({Pass::kForward, k, 0});
  for (int k = warmup; k < micro_batches; ++k) {
    ops.push_back({Pass::kForward, k, 0});
    ops.push_back({Pass::kBackward, k, 0});
  }
  for (int k = 0; k < warmup; ++k) ops.push_back({Pass::kBackward, k, 0});
  return ops;
}

}  // namespace towers::exercises

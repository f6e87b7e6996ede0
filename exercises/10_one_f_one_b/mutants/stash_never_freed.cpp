// SPDX-License-Identifier: MIT
// mutant: no cool-down: the warm-up's micro-batches are never run backward, their activations never freed
#include <algorithm>

#include "one_f_one_b.hpp"

namespace towers::exercises {

std::vector<StageOp> one_f_one_b(int stages, int micro_batches, int stage) {
  const int warmup = std::min(stages - stage - 1, micro_batches);
  std::vector<StageOp> ops;
  for (int k = 0; k < warmup; ++k) ops.push_back({Pass::kForward, k, 0});
  for (int k = 0; k < micro_batches - warmup; ++k) {
    ops.push_back({Pass::kForward, warmup + k, 0});
    ops.push_back({Pass::kBackward, k, 0});
  }
  return ops;
}

}  // namespace towers::exercises

// SPDX-License-Identifier: MIT
// Exercise 10, reference solution: 1F1B (PipeDream-Flush) for one stage.
#include <algorithm>

#include "one_f_one_b.hpp"

namespace towers::exercises {

std::vector<StageOp> one_f_one_b(int stages, int micro_batches, int stage) {
  // Stage s's first backward needs micro-batch 0 to reach the last stage and come back:
  // p-s-1 forwards downstream. Running that many forwards meanwhile keeps it busy; one
  // more would only hold one more micro-batch's activations.
  const int warmup = std::min(stages - stage - 1, micro_batches);
  std::vector<StageOp> ops;
  for (int k = 0; k < warmup; ++k) ops.push_back({Pass::kForward, k, 0});
  for (int k = 0; k < micro_batches - warmup; ++k) {  // steady state: one F, one B
    ops.push_back({Pass::kForward, warmup + k, 0});
    ops.push_back({Pass::kBackward, k, 0});
  }
  for (int k = micro_batches - warmup; k < micro_batches; ++k) {  // cool-down
    ops.push_back({Pass::kBackward, k, 0});
  }
  return ops;
}

}  // namespace towers::exercises

// SPDX-License-Identifier: MIT
// mutant: the warm-up capped at the micro-batches on stage 0 only, the stage with the longest: stage 1 still runs forwards of micro-batches that do not exist once p - 1 exceeds m by two
#include <algorithm>

#include "one_f_one_b.hpp"

namespace towers::exercises {

std::vector<StageOp> one_f_one_b(int stages, int micro_batches, int stage) {
  const int warmup = stage == 0 ? std::min(stages - 1, micro_batches) : stages - stage - 1;
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

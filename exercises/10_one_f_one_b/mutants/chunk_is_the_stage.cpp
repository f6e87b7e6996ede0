// SPDX-License-Identifier: MIT
// mutant: every op's chunk set to the stage's number, as if a stage were its own model chunk: the order is right, but the pipeline's dependency() reads chunk s of stage s as virtual stage s * p + s
#include <algorithm>

#include "one_f_one_b.hpp"

namespace towers::exercises {

std::vector<StageOp> one_f_one_b(int stages, int micro_batches, int stage) {
  const int warmup = std::min(stages - stage - 1, micro_batches);
  std::vector<StageOp> ops;
  for (int k = 0; k < warmup; ++k) ops.push_back({Pass::kForward, k, stage});
  for (int k = 0; k < micro_batches - warmup; ++k) {  // steady state: one F, one B
    ops.push_back({Pass::kForward, warmup + k, stage});
    ops.push_back({Pass::kBackward, k, stage});
  }
  for (int k = micro_batches - warmup; k < micro_batches; ++k) {  // cool-down
    ops.push_back({Pass::kBackward, k, stage});
  }
  return ops;
}

}  // namespace towers::exercises

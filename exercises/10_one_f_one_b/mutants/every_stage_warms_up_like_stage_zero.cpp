// SPDX-License-Identifier: MIT
// mutant: every stage warms up with stage 0's p - 1 forwards: right for stage 0, but later stages hold more activations than they need
#include <algorithm>

#include "one_f_one_b.hpp"

namespace towers::exercises {

std::vector<StageOp> one_f_one_b(int stages, int micro_batches, int stage) {
  (void)stage;
  const int warmup = std::min(stages - 1, micro_batches);
  std::vector<StageOp> ops;
  for (int k = 0; k < warmup; ++k) ops.push_back({Pass::kForward, k, 0});
  for (int k = 0; k < micro_batches - warmup; ++k) {
    ops.push_back({Pass::kForward, warmup + k, 0});
    ops.push_back({Pass::kBackward, k, 0});
  }
  for (int k = micro_batches - warmup; k < micro_batches; ++k) ops.push_back({Pass::kBackward, k, 0});
  return ops;
}

}  // namespace towers::exercises

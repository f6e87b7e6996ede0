// SPDX-License-Identifier: MIT
// mutant: the warm-up capped at the micro-batches of one round of p, the last round holding m % p: right when m < p or p divides m, too few forwards otherwise
#include <algorithm>

#include "one_f_one_b.hpp"

namespace towers::exercises {

std::vector<StageOp> one_f_one_b(int stages, int micro_batches, int stage) {
  const int last_round = micro_batches % stages == 0 ? stages : micro_batches % stages;
  const int warmup = std::min(stages - stage - 1, last_round);
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

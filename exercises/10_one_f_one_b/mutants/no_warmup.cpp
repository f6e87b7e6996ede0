// SPDX-License-Identifier: MIT
// mutant: "one forward, one backward" read literally: no warm-up on any stage, so every stage but the last idles while its first gradient travels
#include <algorithm>

#include "one_f_one_b.hpp"

namespace towers::exercises {

std::vector<StageOp> one_f_one_b(int stages, int micro_batches, int stage) {
  (void)stages;
  (void)stage;
  std::vector<StageOp> ops;
  for (int k = 0; k < micro_batches; ++k) {
    ops.push_back({Pass::kForward, k, 0});
    ops.push_back({Pass::kBackward, k, 0});
  }
  return ops;
}

}  // namespace towers::exercises

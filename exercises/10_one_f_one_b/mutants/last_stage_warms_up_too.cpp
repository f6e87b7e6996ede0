// SPDX-License-Identifier: MIT
// mutant: "a backward needs a forward first", so even the last stage warms up with one forward (max(p - s - 1, 1)): it holds two micro-batches where one suffices
#include <algorithm>

#include "one_f_one_b.hpp"

namespace towers::exercises {

std::vector<StageOp> one_f_one_b(int stages, int micro_batches, int stage) {
  const int warmup = std::min(std::max(stages - stage - 1, 1), micro_batches);
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

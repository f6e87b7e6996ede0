// SPDX-License-Identifier: MIT
// Exercise 10: the 1F1B pipeline schedule of one stage. See README.md.
//
// The model's layers are cut into `stages` stages, the batch into `micro_batches`
// micro-batches. Stage s may run micro-batch k's forward (F k) only after stage s-1 has,
// and its backward (B k) only after stage s+1 has (the last stage: after its own F k).
// Return the order in which stage `stage` runs its ops under 1F1B: a warm-up of forwards,
// then one forward and one backward in turn, then the backwards left. Every micro-batch's
// F and B exactly once, micro-batches in increasing order within each pass.
#pragma once

#include <vector>

#include "src/parallel/pipeline_schedule.hpp"  // StageOp, Pass (types only)

namespace towers::exercises {

/// Stage `stage`'s 1F1B order (chunk 0 for every op). 0 <= stage < stages; both counts >= 1.
std::vector<StageOp> one_f_one_b(int stages, int micro_batches, int stage);

}  // namespace towers::exercises

// SPDX-License-Identifier: MIT
// InputPosition: where a training input stands, enough to continue it exactly.
//
// Nothing random in the input has a running state to save. The order of epoch e is a
// permutation drawn from (seed, e), and each image's distortion from (seed, e, index)
// (iterator_plan.hpp, preprocess.hpp). So (seed, epoch, position) pins down every batch
// still to come; the data set's size and the global batch are recorded as well, so a
// resume with another data set or batch is refused instead of silently drifting.
// A plain value; checkpoints store it (model/checkpoint.hpp). Introduced in chapter 1.
#pragma once

#include <cstdint>

namespace towers::data {

/// Where a training input stands: (seed, epoch, position) and the set and batch they
/// refer to. Equal positions continue with the same batches.
struct InputPosition {
  std::uint64_t seed = 0;          ///< seeds every epoch's shuffle and every distortion
  std::uint64_t examples = 0;      ///< size of the training set the orders permute
  std::uint64_t global_batch = 0;  ///< examples taken per step (all towers together)
  std::uint64_t epoch = 0;         ///< the epoch whose order is being read
  std::uint64_t position = 0;      ///< examples of that order already taken, 0 .. examples

  /// Field by field: the same input, at the same place.
  bool operator==(const InputPosition&) const = default;
};

}  // namespace towers::data

// SPDX-License-Identifier: MIT
// InputSource: the training input as a run's checkpoints see it, the input's two verbs
// beside a Placement's two: where it stands, and a restore to such a position, so that a
// resumed run reads exactly the batches an uninterrupted one would have. The tutorial's
// global-batch queue (InputQueue, chapters 1-3) and the towers' own iterators
// (TowerInputs, chapter 4 on) are the two. Used from the training thread.
// Introduced in chapter 1.
#pragma once

#include "data/input_position.hpp"

namespace towers {

/// Where the input stands, and a restore to such a place. Introduced in chapter 1.
class InputSource {
 public:
  virtual ~InputSource() = default;
  /// Where the input stands: the position of the next batch it will deliver.
  virtual data::InputPosition position() const = 0;
  /// Continues from `position` (a resumed checkpoint's). Throws UsageError, naming the
  /// flag that differs, when this input cannot continue there (another --seed, ...).
  virtual void restore(const data::InputPosition& position) = 0;
};

}  // namespace towers

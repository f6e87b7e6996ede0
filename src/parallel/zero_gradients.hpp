// SPDX-License-Identifier: MIT
// TransientGradients: at ZeRO-2 and -3 a tower keeps only its shard of the gradients.
//
// The backward pass still writes every layer's gradients into one whole buffer: the towers'
// passes are enqueued one tower after another, so a per-layer reduce-scatter (chapter 6's
// buckets) could not be enqueued on all towers while the pass goes on. So the whole buffer
// is the step's single bucket: allocated when the step begins, reduce-scattered after the
// backward pass, its owned shard copied into the tower's persistent gradient shard, and
// freed when the step has finished. The ledger therefore shows, at its peak, the whole
// buffer plus the shard (zero_memory.hpp's transient term B = Ψ); between steps only the
// shard. With stages 0 and 1 the towers keep the buffer make_towers made, as chapter 4.
// Introduced in chapter 8.
#pragma once

#include <memory>
#include <vector>

#include "parallel/tower.hpp"

namespace towers {

/// The towers' whole gradient buffers: persistent (stages 0-1) or per step (2-3).
class TransientGradients {
 public:
  /// `transient`: free each tower's gradient buffer now and make one per step.
  /// `towers` must outlive this object.
  TransientGradients(std::vector<std::unique_ptr<Tower>>& towers, bool transient);

  /// Before the step's first pass: each tower's whole buffer (tower.grads), allocated as
  /// MemoryCategory::kGradients when transient. Returns the buffers, tower i's first.
  std::vector<float*> begin_step();
  /// After the step has finished on every stream (the runtime synchronized): frees the
  /// whole buffers when transient.
  void end_step();

 private:
  std::vector<std::unique_ptr<Tower>>& towers_;
  bool transient_;
};

}  // namespace towers

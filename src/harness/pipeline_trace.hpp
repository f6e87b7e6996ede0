// SPDX-License-Identifier: MIT
// PipelineTrace: what chapter 4's trace shows beyond chapter 3's analysis.
//
//   allreduce_ms   per step, from the start of the first all-reduce op ("ring ...",
//                  "device0 ...", "nccl allreduce" or "mpi allreduce", any stream) to the end of the last: how long the
//                  towers spent meeting. Mean over steps, the first (warm-up) excluded
//                  when there are more.
//   input_overlap  of the time the iterators' "copy input" ops ran, the fraction during
//                  which some tower was computing (any other op tagged with a tower):
//                  input production hidden behind compute. Over the whole run.
//
// Feed it every span collected at each step's end (TowerTraining::watch_trace), whatever
// step they are tagged with: the iterators' copies run on their own schedule. Used from
// the training thread. Introduced in chapter 4.
#pragma once

#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace towers {

/// All-reduce time and input/compute overlap, accumulated step by step.
class PipelineTrace {
 public:
  /// Adds the spans collected at the end of one step.
  void collect(const std::vector<TraceEvent>& events);
  /// Mean all-reduce time per step in ms (see above); 0 with no all-reduce ops (one tower).
  double mean_allreduce_ms() const;
  /// Fraction (0..1) of input copy time that overlapped compute; 0 with no copies.
  double input_overlap() const;

 private:
  std::vector<double> allreduce_ms_;  // per collected step that had all-reduce ops
  double input_us_ = 0;               // total "copy input" time
  double input_overlapped_us_ = 0;    // of which some tower was computing
};

/// Whether `name` is an all-reduce op: the ring's "ring ..." (chapter 5's "ring sendrecv"
/// too), chapter 4's "device0 ..." (on a stream of no tower), "nccl allreduce", or chapter
/// 5's "mpi allreduce".
bool is_allreduce_op(const std::string& name);

}  // namespace towers

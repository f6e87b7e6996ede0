// SPDX-License-Identifier: MIT
// OverlapTrace: how much of the all-reduce chapter 6 hides under compute, from the trace.
//
// Per step and device: A = the union of the all-reduce ops' spans (is_allreduce_op) on
// that device, C = the union of every other op tagged with a tower on that device, except
// the iterators' "copy input" (input, not compute). Then
//   overlap_comm     = sum |A and C| / sum |A|: the share of all-reduce time during which
//                      the same device was also computing (0: none hidden, 1: all);
//   exposed_comm_ms  = sum (|A| - |A and C|) / (devices x steps): all-reduce time per
//                      step and device with nothing else running, the wait overlap removes.
// Steps are counted from the second one when there are more (the first warms up).
// Feed it every span collected at each step's end (TowerTraining::watch_trace). Used
// from the training thread. Introduced in chapter 6.
#pragma once

#include <map>
#include <vector>

#include "trace/trace.hpp"

namespace towers {

/// All-reduce time hidden under compute, accumulated step by step.
class OverlapTrace {
 public:
  /// Adds the spans collected at the end of one step.
  void collect(const std::vector<TraceEvent>& events);
  /// Share (0..1) of all-reduce time that ran while the same device computed.
  double overlap_comm() const;
  /// All-reduce time per step and device with no compute beside it, in ms.
  double exposed_comm_ms() const;

 private:
  struct Totals {
    double comm_us = 0;    // |A|
    double hidden_us = 0;  // |A and C|
    int device_steps = 0;
  };
  std::map<int, Totals> by_step_;  // step -> totals over its devices
  Totals counted() const;          // every step but the first, when there are more
};

}  // namespace towers

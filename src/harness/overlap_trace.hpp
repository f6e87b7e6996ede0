// SPDX-License-Identifier: MIT
// OverlapTrace: how much communication a chapter hides under compute, from the trace.
//
// Per step and device: A = the union of the spans of the communication measured (chapter
// 6: the all-reduce ops, is_allreduce_op; chapter 8: ZeRO-3's layer gathers,
// span::is_layer_gather) on that device, C = the union of every other op tagged with a
// tower on that device, except communication of either kind and the iterators' "copy
// input" (input, not compute). Then
//   overlap_comm     = sum |A and C| / sum |A|: the share of communication time during
//                      which the same device was also computing (0: none hidden, 1: all);
//   exposed_comm_ms  = sum (|A| - |A and C|) / (devices x steps): communication time per
//                      step and device with nothing else running, the wait overlap removes.
// Steps are counted from the second one when there are more (the first warms up).
// Feed it every span collected at each step's end (TowerTraining::watch_trace). Used
// from the training thread. Introduced in chapter 6; chapter 8 measures its gathers with it.
#pragma once

#include <map>
#include <string_view>
#include <vector>

#include "trace/span_names.hpp"
#include "trace/trace.hpp"

namespace towers {

/// Communication time hidden under compute, accumulated step by step.
class OverlapTrace {
 public:
  /// Which spans are the communication measured: by name.
  using IsCommunication = bool (*)(std::string_view name);
  /// Measures the ops `is_comm` names; the default, chapter 6's all-reduce ops.
  explicit OverlapTrace(IsCommunication is_comm = span::is_allreduce);
  /// Adds the spans collected at the end of one step.
  void collect(const std::vector<TraceEvent>& events);
  /// Share (0..1) of the measured communication time that ran while the same device computed.
  double overlap_comm() const;
  /// Measured communication time per step and device with no compute beside it, in ms.
  double exposed_comm_ms() const;

 private:
  struct Totals {
    double comm_us = 0;    // |A|
    double hidden_us = 0;  // |A and C|
    int device_steps = 0;
  };
  IsCommunication is_comm_;
  std::map<int, Totals> by_step_;  // step -> totals over its devices
  Totals counted() const;          // every step but the first, when there are more
};

}  // namespace towers

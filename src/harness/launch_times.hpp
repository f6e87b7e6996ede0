// SPDX-License-Identifier: MIT
// LaunchTimes: the host time of chapter 7's one launch() per step, averaged over the steps
// that measure the launch and nothing else.
//
// Two kinds of step do not: the first (one-time costs: the graph's first upload, page
// faults) and the traced ones. On cuda a traced launch also records the span's two CUDA
// events around the graph, a cost of the trace, not of the launch, and only some steps
// are traced there (the probe's and the last, TowerTraining says which), so a mean over
// every step mixed the two. When no step is left (the host backend traces every step; so
// does cuda with a trace file) the traced steps after the first are averaged, and from()
// says so. On the host backend that costs the launch nothing: its workers record the spans.
#pragma once

#include <string>

namespace towers {

/// The mean of one host call per step over the steps that measure it alone. Chapter 7.
class LaunchTimes {
 public:
  /// Records step `step`'s launch: `ms` of host time, `traced` if the step's ops were traced.
  void add(int step, bool traced, double ms);
  /// Mean ms over the untraced steps after the first; with none, over every step after
  /// the first; with only step 0, step 0's; 0 before any add().
  double mean_ms() const;
  /// How many launches mean_ms() averaged.
  int counted() const;
  /// What mean_ms() averaged: "untraced_steps", "traced_steps" (every step after the first
  /// was traced), "first_step" (there was only step 0) or "none".
  std::string from() const;

 private:
  int steps_ = 0;
  double first_ms_ = 0;
  double later_ms_ = 0, untraced_ms_ = 0;  // sums over the steps after the first
  int later_ = 0, untraced_ = 0;
};

}  // namespace towers

// SPDX-License-Identifier: MIT
// Analysis of a trace: how many towers were busy at once, and for how long.
//
// A tower is busy while any op tagged with it runs on any device. Per step we compute the
// union of each tower's op intervals and sweep over them:
//   max_concurrent_towers  the largest number of towers busy at the same instant;
//   overlap                time with >= 2 towers busy / time with >= 1 tower busy (0..1);
// What "runs" means depends on how the spans were timed:
//   host backend   a span is the worker thread running the op: real execution;
//   cuda backend   when a step has stamped spans (TraceEvent::stamped), a tower is busy
//                  only while its own kernels ran (their %globaltimer stamps, ran_us):
//                  kernels that actually ran together. cuBLAS GEMMs and copies carry no
//                  stamps and count as idle, so this is a lower bound. The event-timed
//                  spans (stream occupancy, queued time included: an upper bound) are
//                  still analysed, as stream_concurrent_towers and stream_overlap.
//   device_ms              first device op start to last device op end in the step;
//   host_enqueue_ms        total of host spans named "enqueue" in the step.
// Intervals that only touch (one ends where the next starts) do not overlap.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trace/trace.hpp"

namespace towers {

/// What one step's trace shows about parallelism. Introduced in chapter 0.
struct StepAnalysis {
  int step = -1;                  ///< global_step the spans belong to
  int max_concurrent_towers = 0;  ///< most towers busy at one instant
  double overlap = 0;             ///< fraction of tower-busy time with >= 2 towers busy
  double device_ms = 0;           ///< span of all device ops of the step
  double tower_busy_ms = 0;       ///< time with at least one tower busy
  double host_enqueue_ms = 0;     ///< host time spent enqueueing the step
  /// True when the tower metrics above come from kernel stamps (cuda), false when from
  /// the spans themselves (host threads).
  bool from_kernel_stamps = false;
  int stream_concurrent_towers = 0;  ///< as max_concurrent_towers, from the spans alone
  double stream_overlap = 0;         ///< as overlap, from the spans alone
  /// Device ops of the step whose kernel stamps were lost (TraceEvent::stamps_lost): they
  /// counted as idle above, so the stamp-based numbers are lower than what ran.
  int lost_stamp_ops = 0;
};

/// A time interval [first, second) in microseconds.
using Interval = std::pair<double, double>;

/// The sorted, disjoint union of `intervals` (overlapping or touching ones merged).
std::vector<Interval> union_of(std::vector<Interval> intervals);

/// Analyses the spans of one step (all spans when `step` is -1); record and wait markers
/// (TraceEvent::is_span() false) count for nothing.
StepAnalysis analyze_step(const std::vector<TraceEvent>& events, int step);

/// The line a program prints before its summary when `ops` ops lost their kernel stamps
/// (StepAnalysis::lost_stamp_ops, summed over the run), saying which of its numbers read
/// low and what to do; empty when `ops` is 0.
std::string lost_stamps_warning(long long ops);
/// Prints lost_stamps_warning(ops) to stderr (after flushing stdout), if there is one.
void print_lost_stamps_warning(long long ops);

/// One StepAnalysis per step (>= 0) found in `events`, in step order.
std::vector<StepAnalysis> analyze_steps(const std::vector<TraceEvent>& events);

/// The spans and markers of one step (all when `step` is -1).
std::vector<TraceEvent> events_of_step(const std::vector<TraceEvent>& events, int step);

}  // namespace towers

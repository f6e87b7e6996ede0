// SPDX-License-Identifier: MIT
#include "runtime/span_resolver.hpp"

#include <utility>

namespace towers {

Trace::Resolve resolve_when_complete(SpanEvents events) {
  return [events = std::move(events)](TraceEvent& span) {
    if (!events.end->query()) return false;  // still in flight: the next collect()
    // Both events completed, so their times exist (no cudaErrorNotReady).
    // Open (issue 26), needs a GPU to check: elapsed_ms_since is float ms since the device's
    // epoch, so a span's edges step by ~4 us after a minute and 0.25 ms after an hour, while
    // the stamps below stay exact in ns; re-anchoring the epoch (and the stamps' clock with it)
    // must be measured against real drift first. gpu-check's runs last seconds: about 1 us.
    const double start_ms = events.start->elapsed_ms_since(*events.epoch);
    const double end_ms = events.end->elapsed_ms_since(*events.epoch);
    span.start_us = events.epoch_host_us + start_ms * 1000.0;
    span.end_us = events.epoch_host_us + end_ms * 1000.0;
    if (events.stamps) {
      // The kernels finished before `end` completed, so their records are final now. An
      // op that launched none of our kernels (cuBLAS only, a graph replay) has no stamps
      // to tell: not stamped, so the analysis does not read "no kernel ran" from it.
      auto ran = events.stamps->ran_us();
      span.stamped = ran.has_value() && !ran->empty() && !events.stamps->missed();
      // Reported, not silent (lost_stamp_ops): the analysis counts this op as idle.
      span.stamps_lost = events.stamps->missed() || !ran.has_value();
      if (ran) span.ran_us = std::move(*ran);
    }
    return true;
  };
}

}  // namespace towers

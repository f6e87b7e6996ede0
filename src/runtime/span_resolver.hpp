// SPDX-License-Identifier: MIT
// The times of a traced op, read from the events recorded around it once it has run.
//
// A stream that times ops with device events (the cuda backend) records `start` before
// the op and `end` after it, and adds a pending span to the trace. The trace's collect()
// may run at any moment — an input producer thread enqueues traced copies whenever a slot
// frees up — so the op may still be queued or running. Asking for the time of an event the
// device has not reached is an error (cudaErrorNotReady); the resolver therefore asks
// end.query() first and answers "not yet", leaving the span for the next collect.
// `start` completes before `end` on the same stream, so end's completion covers both.
// Once `end` completed, the op's kernels have finished too, so their stamps (if the op
// has any) are read at that moment as well: the span's ran_us.
#pragma once

#include <memory>

#include "runtime/event.hpp"
#include "runtime/kernel_stamps.hpp"
#include "trace/trace.hpp"

namespace towers {

/// The events that time one traced op on a device.
struct SpanEvents {
  std::shared_ptr<Event> epoch;  ///< completed before any op: the zero of this device's times
  double epoch_host_us = 0;      ///< trace time (Trace::now_us) at which `epoch` completed
  std::shared_ptr<Event> start;  ///< recorded just before the op
  std::shared_ptr<Event> end;    ///< recorded just after the op
  std::shared_ptr<OpKernelStamps> stamps;  ///< the op's kernel stamps; null: none taken
};

/// A Trace::Resolve that returns false while `events.end` has not completed and then
/// fills the span's start_us and end_us from the elapsed times since the epoch, and its
/// ran_us and stamped from `events.stamps`. Keeps the events and the stamp records until
/// the trace drops the resolver.
Trace::Resolve resolve_when_complete(SpanEvents events);

}  // namespace towers

// SPDX-License-Identifier: MIT
// A hand-made span for the tests of the trace analyses and outputs: an op of `tower` on
// stream 0 of `device`, in `step`, from `start_ms` to `end_ms`.
#pragma once

#include "trace/trace.hpp"

namespace towers::testing {

inline TraceEvent span(int device, int tower, double start_ms, double end_ms, int step = 0) {
  return TraceEvent{device, 0, tower, step, "op", start_ms * 1000, end_ms * 1000};
}

}  // namespace towers::testing

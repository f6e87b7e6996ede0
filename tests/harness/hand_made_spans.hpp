// SPDX-License-Identifier: MIT
// Hand-made trace spans for the tests of the trace analyses (pipeline_trace, overlap_trace):
// one op of `name` on stream 0 of `device`, for `tower` in `step`, from start to end (µs).
#pragma once

#include <string>

#include "trace/trace.hpp"

namespace towers::testing {

inline TraceEvent op(int device, int tower, int step, const std::string& name, double start_us,
                     double end_us) {
  return TraceEvent{.device = device, .stream = 0, .tower = tower, .step = step, .name = name,
                    .start_us = start_us, .end_us = end_us};
}

}  // namespace towers::testing

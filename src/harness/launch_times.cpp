// SPDX-License-Identifier: MIT
#include "harness/launch_times.hpp"

namespace towers {

void LaunchTimes::add(int step, bool traced, double ms) {
  ++steps_;
  if (step == 0) {  // one-time costs: kept only for a run of one step
    first_ms_ = ms;
    return;
  }
  later_ms_ += ms;
  ++later_;
  if (!traced) {
    untraced_ms_ += ms;
    ++untraced_;
  }
}

double LaunchTimes::mean_ms() const {
  if (untraced_ > 0) return untraced_ms_ / untraced_;
  if (later_ > 0) return later_ms_ / later_;
  return steps_ > 0 ? first_ms_ : 0;
}

int LaunchTimes::counted() const {
  if (untraced_ > 0) return untraced_;
  if (later_ > 0) return later_;
  return steps_ > 0 ? 1 : 0;
}

std::string LaunchTimes::from() const {
  if (untraced_ > 0) return "untraced_steps";
  if (later_ > 0) return "traced_steps";
  return steps_ > 0 ? "first_step" : "none";
}

}  // namespace towers

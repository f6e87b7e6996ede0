// SPDX-License-Identifier: MIT
// Wall-clock helpers shared by the benchmarks and the training log: elapsed time since a
// steady_clock instant, and the median of a set of timings.
#pragma once

#include <chrono>
#include <vector>

namespace towers::base {

/// The clock every timing uses: steady, so never set back.
using Clock = std::chrono::steady_clock;

/// Seconds from `start` to now.
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Milliseconds from `start` to now.
inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// The median of `values`: the middle one, or the mean of the two middle ones for an
/// even count; 0 for none.
double median(std::vector<double> values);

/// The smallest of `values`; 0 for none.
double best(const std::vector<double>& values);

}  // namespace towers::base

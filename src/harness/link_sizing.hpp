// SPDX-License-Identifier: MIT
// --link-gbps auto: a simulated link sized to this machine's compute (chapter 6).
//
// Whether overlapping the all-reduce with the backward pass pays depends on the ratio of
// the two: a link so fast that the all-reduce is a blink leaves nothing to hide, one so
// slow that it takes many backward passes leaves most of it exposed. A fixed --link-gbps
// gives a different ratio on every machine (the compute is the machine's), so a lesson
// that holds on one learner's laptop fails on another's. `auto` measures one tower's
// backward pass here, on one simulated device as each tower has, and picks the bandwidth
// at which one ring all-reduce of every gradient takes as long:
//
//   ring all-reduce of P floats among N towers: 2 (N-1) hops, each moving P/N floats
//   t = 2 (N-1) * 8 * (4 P / N) / (gbps * 1e9)      =>      gbps = 64 (N-1) P / (N t 1e9)
//
// Latency (--link-latency-us) is added on top, as with a given bandwidth. One tower and
// N = 1 need no link: auto then leaves the link unlimited.
#pragma once

#include <string>

namespace towers {

/// A link sized by size_link_to_backward(), and what it was sized from.
struct LinkSizing {
  double gbps = 0;         ///< the bandwidth chosen; 0: none needed (one tower)
  double backward_ms = 0;  ///< one tower's backward pass, measured here (fastest of a few)
  double allreduce_ms = 0; ///< one all-reduce of every gradient on that link (= backward_ms)
  /// One line for the run's log: what was measured and the link it gave.
  std::string describe(int towers) const;
};

/// Measures one tower's backward pass of `batch_size` images on a simulated device of its
/// own (zero images: the time of the products does not depend on the values), and returns
/// the bandwidth at which a ring all-reduce of every gradient among `towers` towers takes
/// that long. Takes about six steps' time of one tower. Host backend only.
LinkSizing size_link_to_backward(int towers, int batch_size);

/// The ring all-reduce's modelled time, in ms, of every gradient among `towers` towers on
/// a link of `gbps` (the formula above, no latency): what the sizing solves for.
double ring_allreduce_ms(int towers, double gbps);

}  // namespace towers

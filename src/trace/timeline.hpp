// SPDX-License-Identifier: MIT
// Text timeline: one row per device stream, one column per time slice.
//
//   dev0 s0 |000000000.......................|
//   dev1 s0 |.........1111111111.............|
//   host    |ee..............................|
//
// A digit (or letter, from tower 10 on) is the tower whose op ran in that slice, '#' an
// op of no tower, 'e' host enqueue time, '.' idle. A staircase means towers took turns;
// digits stacked in one column mean they ran at the same time.
#pragma once

#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace towers {

/// How to draw a timeline.
struct TimelineOptions {
  int width = 64;       ///< columns of the time axis
  std::string title;    ///< printed above the rows when not empty
  double axis_ms = 0;   ///< length of the time axis; 0: fit the events. Give two
                        ///< timelines the same axis_ms to compare them by eye.
};

/// Renders the spans of `events` (usually one step's) as text, ending with a scale line;
/// record and wait markers are left out.
std::string render_timeline(const std::vector<TraceEvent>& events,
                            const TimelineOptions& options = {});

/// The character that marks `tower` in timelines: 0-9, then a-z, '#' for no tower.
char tower_glyph(int tower);

}  // namespace towers

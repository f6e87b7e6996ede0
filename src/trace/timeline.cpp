// SPDX-License-Identifier: MIT
#include "trace/timeline.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace towers {

char tower_glyph(int tower) {
  if (tower < 0) return '#';
  if (tower < 10) return static_cast<char>('0' + tower);
  if (tower < 36) return static_cast<char>('a' + tower - 10);
  return '+';
}

std::string render_timeline(const std::vector<TraceEvent>& all, const TimelineOptions& options) {
  std::ostringstream out;
  if (!options.title.empty()) out << options.title << "\n";
  std::vector<TraceEvent> events;  // the spans: record/wait markers are not drawn here
  for (const auto& e : all) {
    if (e.is_span()) events.push_back(e);
  }
  if (events.empty()) {
    out << "  (no traced work)\n";
    return out.str();
  }
  const int width = std::max(8, options.width);
  double t0 = events.front().start_us, t1 = events.front().end_us;
  for (const auto& e : events) {
    t0 = std::min(t0, e.start_us);
    t1 = std::max(t1, e.end_us);
  }
  if (options.axis_ms > 0) t1 = std::max(t1, t0 + options.axis_ms * 1000.0);
  const double slice_us = std::max(1e-3, (t1 - t0) / width);

  // Rows keyed by (device, stream); the host row (-1, -1) sorts last.
  auto key_of = [](const TraceEvent& e) {
    return e.device < 0 ? std::make_pair(1 << 30, 0) : std::make_pair(e.device, e.stream);
  };
  std::map<std::pair<int, int>, std::string> rows;
  for (const auto& e : events) {
    std::string& row = rows[key_of(e)];
    if (row.empty()) row.assign(width, '.');
    int first = static_cast<int>((e.start_us - t0) / slice_us);
    int last = static_cast<int>((e.end_us - t0) / slice_us);
    first = std::clamp(first, 0, width - 1);
    last = std::clamp(std::max(last, first), 0, width - 1);
    // A slice is drawn when the op covers most of it or the op fits inside it, so
    // back-to-back ops of two towers do not smear into each other's slices.
    for (int c = first; c <= last; ++c) {
      double lo = t0 + c * slice_us, hi = lo + slice_us;
      double covered = std::min(hi, e.end_us) - std::max(lo, e.start_us);
      if (covered >= 0.5 * slice_us || (first == last)) {
        row[c] = e.device < 0 ? 'e' : tower_glyph(e.tower);
      }
    }
  }
  for (const auto& [key, row] : rows) {
    char label[32];
    if (key.first == (1 << 30)) {
      std::snprintf(label, sizeof label, "host");
    } else {
      std::snprintf(label, sizeof label, "dev%d s%d", key.first, key.second);
    }
    out << "  " << label << std::string(10 - std::min<size_t>(10, std::string(label).size()), ' ')
        << "|" << row << "|\n";
  }
  char scale[160];
  std::snprintf(scale, sizeof scale,
                "  %d columns = %.2f ms (one column = %.3f ms); digits: tower, #: no tower, "
                "e: host enqueue, .: idle\n",
                width, (t1 - t0) / 1000.0, slice_us / 1000.0);
  out << scale;
  return out.str();
}

}  // namespace towers

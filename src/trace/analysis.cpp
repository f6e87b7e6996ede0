// SPDX-License-Identifier: MIT
#include "trace/analysis.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "trace/span_names.hpp"

namespace towers {

std::vector<Interval> union_of(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> merged;
  for (const auto& iv : intervals) {
    if (!merged.empty() && iv.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, iv.second);
    } else {
      merged.push_back(iv);
    }
  }
  return merged;
}

std::vector<TraceEvent> events_of_step(const std::vector<TraceEvent>& events, int step) {
  std::vector<TraceEvent> out;
  for (const auto& e : events) {
    if (step == -1 || e.step == step) out.push_back(e);
  }
  return out;
}

StepAnalysis analyze_step(const std::vector<TraceEvent>& all, int step) {
  StepAnalysis result;
  result.step = step;
  std::map<int, std::vector<Interval>> by_tower;
  double first = 0, last = 0;
  bool any_device_op = false;
  for (const auto& e : all) {
    if (step != -1 && e.step != step) continue;
    if (e.device < 0) {
      if (e.name == span::kEnqueue) result.host_enqueue_ms += (e.end_us - e.start_us) / 1000.0;
      continue;
    }
    first = any_device_op ? std::min(first, e.start_us) : e.start_us;
    last = any_device_op ? std::max(last, e.end_us) : e.end_us;
    any_device_op = true;
    if (e.tower >= 0 && e.end_us > e.start_us) by_tower[e.tower].push_back({e.start_us, e.end_us});
  }
  if (any_device_op) result.device_ms = (last - first) / 1000.0;

  // Sweep over the towers' busy intervals: +1 at a start, -1 at an end. At equal times
  // ends come first, so intervals that merely touch never count as concurrent.
  std::vector<std::pair<double, int>> edges;
  for (auto& [tower, intervals] : by_tower) {
    for (const auto& iv : union_of(std::move(intervals))) {
      edges.push_back({iv.first, +1});
      edges.push_back({iv.second, -1});
    }
  }
  std::sort(edges.begin(), edges.end());
  int busy = 0;
  double busy_us = 0, overlapped_us = 0, previous = 0;
  for (const auto& [time, delta] : edges) {
    if (busy >= 1) busy_us += time - previous;
    if (busy >= 2) overlapped_us += time - previous;
    busy += delta;
    result.max_concurrent_towers = std::max(result.max_concurrent_towers, busy);
    previous = time;
  }
  result.tower_busy_ms = busy_us / 1000.0;
  result.overlap = busy_us > 0 ? overlapped_us / busy_us : 0.0;
  return result;
}

std::vector<StepAnalysis> analyze_steps(const std::vector<TraceEvent>& events) {
  std::set<int> steps;
  for (const auto& e : events) {
    if (e.step >= 0) steps.insert(e.step);  // untagged spans (-1) belong to no step
  }
  std::vector<StepAnalysis> out;
  for (int step : steps) out.push_back(analyze_step(events, step));
  return out;
}

}  // namespace towers

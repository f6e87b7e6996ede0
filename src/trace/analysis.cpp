// SPDX-License-Identifier: MIT
#include "trace/analysis.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
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

namespace {

struct Concurrency {
  int max_towers = 0;
  double busy_us = 0;        // time with >= 1 tower busy
  double overlapped_us = 0;  // time with >= 2 towers busy
};

// Sweeps over the towers' busy intervals: +1 at a start, -1 at an end. At equal times
// ends come first, so intervals that merely touch never count as concurrent.
Concurrency sweep(std::map<int, std::vector<Interval>> by_tower) {
  std::vector<std::pair<double, int>> edges;
  for (auto& [tower, intervals] : by_tower) {
    for (const auto& iv : union_of(std::move(intervals))) {
      edges.push_back({iv.first, +1});
      edges.push_back({iv.second, -1});
    }
  }
  std::sort(edges.begin(), edges.end());
  Concurrency c;
  int busy = 0;
  double previous = 0;
  for (const auto& [time, delta] : edges) {
    if (busy >= 1) c.busy_us += time - previous;
    if (busy >= 2) c.overlapped_us += time - previous;
    busy += delta;
    c.max_towers = std::max(c.max_towers, busy);
    previous = time;
  }
  return c;
}

double fraction(const Concurrency& c) { return c.busy_us > 0 ? c.overlapped_us / c.busy_us : 0.0; }

}  // namespace

StepAnalysis analyze_step(const std::vector<TraceEvent>& all, int step) {
  StepAnalysis result;
  result.step = step;
  std::map<int, std::vector<Interval>> spans_by_tower, ran_by_tower;
  double first = 0, last = 0;
  bool any_device_op = false;
  for (const auto& e : all) {
    if (step != -1 && e.step != step) continue;
    if (!e.is_span()) continue;  // record/wait markers: instants, not work
    if (e.device < 0) {
      if (e.name == span::kEnqueue) result.host_enqueue_ms += (e.end_us - e.start_us) / 1000.0;
      continue;
    }
    first = any_device_op ? std::min(first, e.start_us) : e.start_us;
    last = any_device_op ? std::max(last, e.end_us) : e.end_us;
    any_device_op = true;
    result.from_kernel_stamps = result.from_kernel_stamps || e.stamped;
    if (e.stamps_lost) ++result.lost_stamp_ops;
    if (e.tower < 0) continue;
    if (e.end_us > e.start_us) spans_by_tower[e.tower].push_back({e.start_us, e.end_us});
    if (!e.stamped) continue;  // unstamped ops (cuBLAS, copies, a full ring) count as idle
    for (const auto& iv : e.ran_us) {
      if (iv.second > iv.first) ran_by_tower[e.tower].push_back(iv);
    }
  }
  if (any_device_op) result.device_ms = (last - first) / 1000.0;

  const Concurrency spans = sweep(std::move(spans_by_tower));
  result.stream_concurrent_towers = spans.max_towers;
  result.stream_overlap = fraction(spans);
  const Concurrency ran = result.from_kernel_stamps ? sweep(std::move(ran_by_tower)) : spans;
  result.max_concurrent_towers = ran.max_towers;
  result.tower_busy_ms = ran.busy_us / 1000.0;
  result.overlap = fraction(ran);
  return result;
}

std::string lost_stamps_warning(long long ops) {
  if (ops <= 0) return "";
  return "towers: warning: " + std::to_string(ops) +
         " traced op(s) launched kernels whose stamps were never read back (lost_stamp_ops): "
         "they count as idle, so max_concurrent_towers and overlap from kernel_stamps are "
         "lower than what ran. A device's stamp ring holds one record per stamped launch "
         "until its span is collected (kKernelStampRecords in src/runtime/cuda/cuda_device.hpp):"
         " run fewer towers per device, or raise it.";
}

void print_lost_stamps_warning(long long ops) {
  const std::string warning = lost_stamps_warning(ops);
  if (warning.empty()) return;
  std::fflush(stdout);  // after the lines printed so far, as the terminal shows them
  std::fprintf(stderr, "%s\n", warning.c_str());
}

std::vector<StepAnalysis> analyze_steps(const std::vector<TraceEvent>& events) {
  std::set<int> steps;
  for (const auto& e : events) {
    // Untagged spans (-1) belong to no step; a marker alone makes no step.
    if (e.step >= 0 && e.is_span()) steps.insert(e.step);
  }
  std::vector<StepAnalysis> out;
  for (int step : steps) out.push_back(analyze_step(events, step));
  return out;
}

}  // namespace towers

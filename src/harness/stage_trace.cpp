// SPDX-License-Identifier: MIT
#include "harness/stage_trace.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "trace/analysis.hpp"
#include "trace/timeline.hpp"

namespace towers {

namespace {

using OpKey = std::tuple<int, char, int, int>;  // stage, pass, micro-batch, chunk

OpKey key_of(int stage, const StageOp& op) {
  return {stage, static_cast<char>(op.pass), op.micro_batch, op.chunk};
}

// The stage whose stream `event` ran on; -1 for none.
int stage_of(const TraceEvent& event, const std::vector<StageStream>& stages) {
  for (int s = 0; s < static_cast<int>(stages.size()); ++s) {
    if (stages[s].device == event.device && stages[s].stream == event.stream) return s;
  }
  return -1;
}

}  // namespace

StageBusy stage_busy(const std::vector<TraceEvent>& events, const std::vector<StageStream>& stages) {
  const int p = static_cast<int>(stages.size());
  StageBusy result;
  result.busy_ms.assign(p, 0.0);
  std::vector<std::vector<Interval>> spans(p);
  double first = 0, last = 0;
  bool any = false;
  for (const auto& event : events) {
    const int s = event.is_span() ? stage_of(event, stages) : -1;
    if (s < 0 || event.end_us <= event.start_us) continue;
    first = any ? std::min(first, event.start_us) : event.start_us;
    last = any ? std::max(last, event.end_us) : event.end_us;
    any = true;
    spans[s].push_back({event.start_us, event.end_us});
  }
  result.window_ms = (last - first) / 1000.0;
  for (int s = 0; s < p; ++s) {
    for (const auto& [start, end] : union_of(spans[s])) result.busy_ms[s] += (end - start) / 1000.0;
  }
  return result;
}

StageTraceAnalysis analyze_stage_trace(const std::vector<TraceEvent>& events,
                                       const PipelineShape& shape,
                                       const std::vector<StageStream>& stages) {
  const int p = static_cast<int>(stages.size());
  StageTraceAnalysis result;
  result.idle_fraction.assign(p, 0.0);
  result.peak_activations.assign(p, 0);
  result.timeline.assign(p, {});
  // The stage ops, by stage, and the window they span.
  std::map<OpKey, const TraceEvent*> span_of;
  std::vector<std::vector<std::pair<StageOp, const TraceEvent*>>> ops(p);
  double first = 0, last = 0;
  for (const auto& event : events) {
    if (!event.is_span()) continue;
    const int s = stage_of(event, stages);
    const auto op = parse_stage_op(event.name);
    if (s < 0 || !op) continue;
    first = result.stage_ops == 0 ? event.start_us : std::min(first, event.start_us);
    last = result.stage_ops == 0 ? event.end_us : std::max(last, event.end_us);
    ++result.stage_ops;
    span_of[key_of(s, *op)] = &event;
    ops[s].push_back({*op, &event});
  }
  if (result.stage_ops == 0) return result;
  result.window_ms = (last - first) / 1000.0;

  // Idle: the window minus the union of everything the stage's stream ran inside it.
  for (int s = 0; s < p; ++s) {
    std::vector<Interval> busy;
    for (const auto& event : events) {
      if (!event.is_span() || stage_of(event, stages) != s) continue;
      const double start = std::max(event.start_us, first), end = std::min(event.end_us, last);
      if (end > start) busy.push_back({start, end});
    }
    double busy_us = 0;
    for (const auto& [start, end] : union_of(busy)) busy_us += end - start;
    result.idle_fraction[s] = 1.0 - busy_us / (last - first);
    result.bubble += result.idle_fraction[s] / p;
  }

  for (int s = 0; s < p; ++s) {
    std::sort(ops[s].begin(), ops[s].end(),
              [](const auto& a, const auto& b) { return a.second->start_us < b.second->start_us; });
    int held = 0;
    for (const auto& [op, event] : ops[s]) {
      // A forward stashes its activations until the backward of the same op starts.
      held += op.pass == Pass::kForward ? 1 : -1;
      result.peak_activations[s] = std::max(result.peak_activations[s], held);
      result.timeline[s].push_back(
          TimedOp{op, (event->start_us - first) / 1000.0, (event->end_us - first) / 1000.0});
      // Took turns: the op it depends on ended before it started. Half a microsecond of
      // slack for CUDA events' resolution; the host clock needs none.
      if (const auto before = dependency(shape, s, op)) {
        const auto found = span_of.find(key_of(before->stage, before->op));
        if (found == span_of.end() || event->start_us < found->second->end_us - 0.5) {
          ++result.order_violations;
        }
      }
    }
  }
  return result;
}

std::string render_stage_gantt(const std::vector<std::vector<TimedOp>>& timeline, int width,
                               double axis_ms) {
  double end_ms = axis_ms;
  for (const auto& stage : timeline) {
    for (const auto& op : stage) end_ms = std::max(end_ms, op.end);
  }
  if (end_ms <= 0 || width < 1) return "";
  const double column_ms = end_ms / width;
  std::string text;
  for (std::size_t s = 0; s < timeline.size(); ++s) {
    char label[32];
    std::snprintf(label, sizeof label, "  stage %-3zu |", s);
    std::string row(static_cast<std::size_t>(width), '.');
    for (const auto& op : timeline[s]) {
      // Every column whose middle falls inside the op.
      for (int c = 0; c < width; ++c) {
        const double middle = (c + 0.5) * column_ms;
        if (middle < op.start || middle >= op.end) continue;
        const int mb = op.op.micro_batch;
        row[c] = op.op.pass == Pass::kForward ? tower_glyph(mb)
                                              : (mb < 26 ? static_cast<char>('A' + mb) : '#');
      }
    }
    text += label + row + "|\n";
  }
  char scale[160];
  std::snprintf(scale, sizeof scale,
                "  %d columns = %.2f ms (one column = %.3f ms); 0-9a-z: forward of that "
                "micro-batch, A-Z: its backward (A = 0), .: idle\n",
                width, end_ms, column_ms);
  return text + scale;
}

}  // namespace towers

// SPDX-License-Identifier: MIT
// Chapter 9's pipeline read back from its trace: the bubble, the activations each stage
// held, and whether every op waited for the op it depends on.
//
// Each stage runs on one stream; its forward and backward passes are spans named as
// to_string(op, true) writes them ("F3.0", "B3.0"), found with parse_stage_op(). The
// window is the first such span's start to the last one's end, over all stages; a stage
// is busy while any span of its stream runs inside the window (its copies of activations
// and gradients included) and idle otherwise. So the bubble here is measured, never
// computed from the schedule: a late wake-up, a slow copy or a wrong order all show.
#pragma once

#include <string>
#include <vector>

#include "parallel/pipeline_schedule.hpp"
#include "trace/trace.hpp"

namespace towers {

/// The stream a stage ran on, as TraceEvent::device and TraceEvent::stream name it.
struct StageStream {
  int device = 0;  ///< Device::index() of the stage's device
  int stream = 0;  ///< Stream::index() of its stream on that device
};

/// What the trace of one pipeline flush shows.
struct StageTraceAnalysis {
  double window_ms = 0;               ///< first stage op's start to the last one's end
  std::vector<double> idle_fraction;  ///< per stage: idle time in the window / window
  double bubble = 0;                  ///< mean of idle_fraction over the stages
  /// Per stage: the most micro-batches whose forward had run and backward not yet
  /// started, in the order the stage's spans started.
  std::vector<int> peak_activations;
  int stage_ops = 0;  ///< forward and backward spans found, all stages
  /// Ops that started before the op they depend on (dependency()) had ended, or whose
  /// dependency is missing from the trace: 0 when the stages took turns as they must.
  int order_violations = 0;
  /// Each stage's forward and backward spans, in start order, times in ms from the
  /// window's start: for drawing.
  std::vector<std::vector<TimedOp>> timeline;
};

/// Reads the spans of `events` that ran on `stages[s]` as stage s of `shape`.
StageTraceAnalysis analyze_stage_trace(const std::vector<TraceEvent>& events,
                                       const PipelineShape& shape,
                                       const std::vector<StageStream>& stages);

/// How busy each stage's stream was in one step of a model split into stages, where a
/// stage's work is many kernels rather than one span per op (chapter 9's --model cifar).
struct StageBusy {
  double window_ms = 0;         ///< first span's start to last span's end, all stages
  std::vector<double> busy_ms;  ///< per stage: the union of its stream's spans
};

/// Reads the spans of `events` that ran on `stages[s]` (waits and records excluded).
StageBusy stage_busy(const std::vector<TraceEvent>& events, const std::vector<StageStream>& stages);

/// A text Gantt chart of `timeline`, one row per stage, `width` columns over `axis_ms`
/// (0: fit): a forward is the micro-batch's glyph (0-9, then a-z), a backward the
/// capital letter of its micro-batch (A = 0, B = 1, ...), '.' idle.
std::string render_stage_gantt(const std::vector<std::vector<TimedOp>>& timeline, int width,
                               double axis_ms = 0);

}  // namespace towers

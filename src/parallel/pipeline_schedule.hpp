// SPDX-License-Identifier: MIT
// Pipeline schedules (chapter 9): in which order each stage runs the forward (F) and
// backward (B) passes of the micro-batches, for GPipe, 1F1B and interleaved 1F1B.
//
// The model's layers are cut into p stages, one per device; a batch is cut into m
// micro-batches. Stage s runs F of a micro-batch after stage s-1 has, and B after stage
// s+1 has. A schedule is only the *order* of one stage's ops; the waits between stages
// come from these two dependencies (dependency() below). With v > 1 (interleaved) each
// stage holds v model chunks: virtual stage c*p + s is chunk c of stage s, so a
// micro-batch visits stage 0, 1, ..., p-1, then stage 0 again for chunk 1, and so on.
//
//   GPipe        every forward, then every backward: F0 F1 .. F(m-1) B0 B1 .. B(m-1).
//                A stage holds all m micro-batches' activations at once.
//   1F1B         warm-up of p-s-1 forwards, then one forward, one backward, ..., then the
//                remaining backwards: p-s forwards before the first backward. At most p-s
//                activations are held (PipeDream-Flush).
//   interleaved  1F1B over v chunks per stage (Megatron-LM's order); needs m % p == 0.
//
// With equal stage costs the idle share of each stage's time (the bubble) is
// (p-1)/(v*m + p-1) for all three (v = 1 for GPipe and 1F1B): ideal_bubble_fraction().
// Everything here is a pure function of the shape; simulate_pipeline() replays a
// schedule on ideal devices to show it. Thread-safe (no state).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace towers {

/// Which order the stages run their micro-batches in.
enum class PipelineSchedule { kGpipe, kOneFOneB, kInterleaved };

/// "gpipe", "1f1b" or "interleaved".
std::string to_string(PipelineSchedule schedule);
/// The schedule named `name` ("gpipe", "1f1b", "interleaved"); nothing for other names.
std::optional<PipelineSchedule> parse_pipeline_schedule(std::string_view name);

/// How the model and the batch are cut.
struct PipelineShape {
  int stages = 2;         ///< p: devices the layers are split over
  int micro_batches = 4;  ///< m: micro-batches per batch
  int chunks = 1;         ///< v: model chunks per stage (interleaved only; else 1)
  /// p * v: the model's pieces, in the order a micro-batch passes through them.
  int virtual_stages() const { return stages * chunks; }
};

/// What is wrong with `shape` for `schedule`, as a sentence that says what to change;
/// empty when it is fine. Programs check this before any work.
std::string pipeline_shape_problem(PipelineSchedule schedule, const PipelineShape& shape);

/// A forward or a backward pass of one micro-batch through one chunk of a stage.
enum class Pass : char { kForward = 'F', kBackward = 'B' };

/// One op of a stage's schedule.
struct StageOp {
  Pass pass = Pass::kForward;  ///< forward or backward
  int micro_batch = 0;  ///< 0..m-1
  int chunk = 0;        ///< 0..v-1: which of the stage's model chunks
  /// Same pass, micro-batch and chunk.
  bool operator==(const StageOp&) const = default;
};

/// An op and the stage that runs it.
struct PipelineOp {
  int stage = 0;  ///< 0..p-1
  StageOp op;     ///< what it runs
  /// Same stage and op.
  bool operator==(const PipelineOp&) const = default;
};

/// "F3" or "B0"; with several chunks "F3.1" (micro-batch 3, chunk 1).
std::string to_string(const StageOp& op, bool with_chunk = false);
/// The op named by `text` as to_string(op, true) writes it ("F3.1"); nothing otherwise.
/// Chapter 9 names each stage op's span so, and reads the spans back with this.
std::optional<StageOp> parse_stage_op(std::string_view text);
/// The ops separated by spaces: "F0 F1 B0 F2 B1 B2".
std::string to_string(const std::vector<StageOp>& ops, bool with_chunk = false);

/// Virtual stage of `chunk` on `stage`: chunk * p + stage.
int virtual_stage(const PipelineShape& shape, int stage, int chunk);

/// The op of another stage (or, for the last virtual stage's backward, the same stage's
/// forward) that must finish before `op` on `stage` can start: the forward of the
/// virtual stage before, the backward of the virtual stage after. Nothing for the first
/// virtual stage's forwards, which read the input.
std::optional<PipelineOp> dependency(const PipelineShape& shape, int stage, const StageOp& op);

/// The warm-up: forwards stage `stage` runs before its steady state, whose first pair is
/// one more forward, then the first backward (Megatron-LM's num_warmup_microbatches).
/// 1F1B: p-s-1, so the stage runs p-s forwards before its first backward; GPipe: m, all
/// of them; interleaved: 2(p-s-1) + (v-1)p, at most m*v.
int warmup_forwards(PipelineSchedule schedule, const PipelineShape& shape, int stage);

/// Stage `stage`'s ops in the order it runs them: every micro-batch's F and B once per
/// chunk. `shape` must have no pipeline_shape_problem().
std::vector<StageOp> stage_schedule(PipelineSchedule schedule, const PipelineShape& shape,
                                    int stage);

/// Calls enqueue(s, op) once for every op of every stage's schedule (schedules[s]), each
/// stage's in its order, and an op only after the op it depends on (dependency()) was
/// passed: an event waited on before it is recorded does not wait (as in CUDA), so a
/// host that only enqueues must enqueue the recording op first. Each pass takes every
/// stage as far as it can go.
void enqueue_in_dependency_order(const PipelineShape& shape,
                                 const std::vector<std::vector<StageOp>>& schedules,
                                 const std::function<void(int stage, const StageOp& op)>& enqueue);

/// The most micro-batch activations `ops` hold at once: a forward stashes one until its
/// backward frees it.
int peak_stashed_activations(const std::vector<StageOp>& ops);

/// (p-1) / (v*m + p-1): the share of each stage's time spent idle, with equal costs.
double ideal_bubble_fraction(PipelineSchedule schedule, const PipelineShape& shape);

/// One op placed on the ideal timeline.
struct TimedOp {
  StageOp op;        ///< what ran
  double start = 0;  ///< when it started, in the forward and backward costs' unit
  double end = 0;    ///< when it ended
};

/// Runs every stage's schedule on ideal devices: a forward of a chunk takes
/// forward_cost / v, a backward backward_cost / v, links are free, and each op starts as
/// soon as its stage is free and its dependency() has finished. Returns each stage's
/// ops with their times. Throws std::logic_error, naming the stuck ops, when the stages'
/// orders wait on each other in a cycle (a broken schedule).
std::vector<std::vector<TimedOp>> simulate_pipeline(PipelineSchedule schedule,
                                                    const PipelineShape& shape,
                                                    double forward_cost, double backward_cost);
/// As above for any per-stage `orders` (one list of ops per stage), e.g. a hand-written
/// schedule to be checked: a deadlocking order throws std::logic_error.
std::vector<std::vector<TimedOp>> simulate_orders(const PipelineShape& shape,
                                                  const std::vector<std::vector<StageOp>>& orders,
                                                  double forward_cost, double backward_cost);

/// Mean over stages of (time a stage is idle) / (first op's start to last op's end, all
/// stages): the bubble, read from a timeline.
double bubble_fraction(const std::vector<std::vector<TimedOp>>& timeline);

}  // namespace towers

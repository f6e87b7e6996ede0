// SPDX-License-Identifier: MIT
#include "parallel/pipeline_schedule.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

namespace towers {

std::string to_string(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::kGpipe: return "gpipe";
    case PipelineSchedule::kOneFOneB: return "1f1b";
    case PipelineSchedule::kInterleaved: return "interleaved";
  }
  return "?";
}

std::optional<PipelineSchedule> parse_pipeline_schedule(std::string_view name) {
  for (auto schedule : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB,
                        PipelineSchedule::kInterleaved}) {
    if (name == to_string(schedule)) return schedule;
  }
  return std::nullopt;
}

std::string pipeline_shape_problem(PipelineSchedule schedule, const PipelineShape& shape) {
  const int p = shape.stages, m = shape.micro_batches, v = shape.chunks;
  if (p < 1) return "--stages must be at least 1 (got " + std::to_string(p) + ")";
  if (m < 1) return "--micro-batches must be at least 1 (got " + std::to_string(m) + ")";
  if (schedule != PipelineSchedule::kInterleaved) {
    if (v != 1) {
      return "--virtual " + std::to_string(v) + " needs --schedule interleaved; " +
             to_string(schedule) + " runs one chunk per stage (leave --virtual at 1)";
    }
    return "";
  }
  if (v < 2) {
    return "--schedule interleaved needs --virtual 2 or more (chunks per stage; got " +
           std::to_string(v) + "); with one chunk per stage use --schedule 1f1b";
  }
  if (m % p != 0) {
    return "--schedule interleaved needs --micro-batches to be a multiple of --stages "
           "(got " + std::to_string(m) + " micro-batches on " + std::to_string(p) +
           " stages): the micro-batches go round the stages in groups of p; try " +
           std::to_string((m / p + 1) * p);
  }
  return "";
}

std::string to_string(const StageOp& op, bool with_chunk) {
  std::string text = static_cast<char>(op.pass) + std::to_string(op.micro_batch);
  if (with_chunk) text += "." + std::to_string(op.chunk);
  return text;
}

std::optional<StageOp> parse_stage_op(std::string_view text) {
  // "F" or "B", digits, ".", digits.
  if (text.size() < 4 || (text[0] != 'F' && text[0] != 'B')) return std::nullopt;
  const auto dot = text.find('.');
  if (dot == std::string_view::npos || dot == 1 || dot + 1 == text.size()) return std::nullopt;
  auto number = [](std::string_view digits) -> std::optional<int> {
    if (digits.size() > 9) return std::nullopt;
    int value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + (c - '0');
    }
    return value;
  };
  const auto micro_batch = number(text.substr(1, dot - 1));
  const auto chunk = number(text.substr(dot + 1));
  if (!micro_batch || !chunk) return std::nullopt;
  return StageOp{static_cast<Pass>(text[0]), *micro_batch, *chunk};
}

std::string to_string(const std::vector<StageOp>& ops, bool with_chunk) {
  std::string text;
  for (const auto& op : ops) text += (text.empty() ? "" : " ") + to_string(op, with_chunk);
  return text;
}

int virtual_stage(const PipelineShape& shape, int stage, int chunk) {
  return chunk * shape.stages + stage;
}

std::optional<PipelineOp> dependency(const PipelineShape& shape, int stage, const StageOp& op) {
  const int here = virtual_stage(shape, stage, op.chunk);
  const int last = shape.virtual_stages() - 1;
  // The virtual stage `there` runs on stage there % p as chunk there / p.
  auto on = [&](int there, Pass pass) {
    return PipelineOp{there % shape.stages, StageOp{pass, op.micro_batch, there / shape.stages}};
  };
  if (op.pass == Pass::kForward) {
    if (here == 0) return std::nullopt;  // reads the micro-batch's input
    return on(here - 1, Pass::kForward);  // the activations from the stage before
  }
  if (here == last) return on(here, Pass::kForward);  // the loss's gradient, computed here
  return on(here + 1, Pass::kBackward);  // the activations' gradient from the stage after
}

int warmup_forwards(PipelineSchedule schedule, const PipelineShape& shape, int stage) {
  const int p = shape.stages, m = shape.micro_batches, v = shape.chunks;
  switch (schedule) {
    case PipelineSchedule::kGpipe:
      return m;
    case PipelineSchedule::kOneFOneB:
      // Stage s's first backward needs micro-batch 0 to reach the last stage, p-s-1
      // stages downstream, and come back; those p-s-1 warm-up forwards and the steady
      // state's first keep stage s busy meanwhile: p-s forwards before that backward.
      return std::min(p - stage - 1, m);
    case PipelineSchedule::kInterleaved:
      // Megatron-LM's count: the first backward (chunk v-1 of micro-batch 0) needs micro-
      // batch 0 through every chunk, which the forwards of the first (v-1) rounds of p
      // micro-batches cover, plus twice the distance to the last stage, there and back.
      return std::min((p - stage - 1) * 2 + (v - 1) * p, m * v);
  }
  return 0;
}

namespace {

// Interleaved: the k-th forward (or backward) of a stage, in Megatron-LM's order. The
// micro-batches go in groups of p; each group passes through chunk 0, 1, ... (forwards)
// or v-1, ..., 0 (backwards) before the next group starts.
StageOp interleaved_op(const PipelineShape& shape, Pass pass, int k) {
  const int p = shape.stages, v = shape.chunks;
  int chunk = (k % (p * v)) / p;
  if (pass == Pass::kBackward) chunk = v - 1 - chunk;
  return StageOp{pass, (k / (p * v)) * p + k % p, chunk};
}

}  // namespace

std::vector<StageOp> stage_schedule(PipelineSchedule schedule, const PipelineShape& shape,
                                    int stage) {
  const std::string problem = pipeline_shape_problem(schedule, shape);
  if (!problem.empty()) throw std::invalid_argument(problem);
  if (stage < 0 || stage >= shape.stages) throw std::out_of_range("no such stage");
  const int total = shape.micro_batches * shape.chunks;  // forwards (and backwards)
  auto nth = [&](Pass pass, int k) {
    if (schedule == PipelineSchedule::kInterleaved) return interleaved_op(shape, pass, k);
    return StageOp{pass, k, 0};
  };
  // Every schedule here is warm-up forwards, then one forward and one backward in turn,
  // then the backwards left: GPipe is all warm-up.
  const int warmup = warmup_forwards(schedule, shape, stage);
  std::vector<StageOp> ops;
  for (int k = 0; k < warmup; ++k) ops.push_back(nth(Pass::kForward, k));
  for (int k = 0; k < total - warmup; ++k) {  // steady state: 1F1B
    ops.push_back(nth(Pass::kForward, warmup + k));
    ops.push_back(nth(Pass::kBackward, k));
  }
  for (int k = total - warmup; k < total; ++k) ops.push_back(nth(Pass::kBackward, k));
  return ops;
}

int peak_stashed_activations(const std::vector<StageOp>& ops) {
  int held = 0, peak = 0;
  for (const auto& op : ops) {
    held += op.pass == Pass::kForward ? 1 : -1;
    peak = std::max(peak, held);
  }
  return peak;
}

double ideal_bubble_fraction(PipelineSchedule schedule, const PipelineShape& shape) {
  const double p = shape.stages, m = shape.micro_batches;
  const double v = schedule == PipelineSchedule::kInterleaved ? shape.chunks : 1;
  return (p - 1) / (v * m + p - 1);
}

std::vector<std::vector<TimedOp>> simulate_pipeline(PipelineSchedule schedule,
                                                    const PipelineShape& shape,
                                                    double forward_cost, double backward_cost) {
  std::vector<std::vector<StageOp>> orders;
  for (int s = 0; s < shape.stages; ++s) orders.push_back(stage_schedule(schedule, shape, s));
  return simulate_orders(shape, orders, forward_cost, backward_cost);
}

std::vector<std::vector<TimedOp>> simulate_orders(const PipelineShape& shape,
                                                  const std::vector<std::vector<StageOp>>& orders,
                                                  double forward_cost, double backward_cost) {
  const int p = shape.stages;
  if (static_cast<int>(orders.size()) != p) throw std::invalid_argument("one order per stage");
  // When each op placed so far ends, keyed by (stage, pass, micro-batch, chunk).
  std::map<std::tuple<int, char, int, int>, double> end_of;
  auto key = [](int stage, const StageOp& op) {
    return std::make_tuple(stage, static_cast<char>(op.pass), op.micro_batch, op.chunk);
  };
  std::vector<std::vector<TimedOp>> timeline(p);
  std::vector<std::size_t> next(p, 0);
  std::vector<double> free_at(p, 0);
  for (bool placed = true; placed;) {
    placed = false;
    for (int s = 0; s < p; ++s) {
      // Place this stage's ops in its order for as long as their dependencies are placed.
      while (next[s] < orders[s].size()) {
        const StageOp& op = orders[s][next[s]];
        double ready = free_at[s];
        if (auto before = dependency(shape, s, op)) {
          auto found = end_of.find(key(before->stage, before->op));
          if (found == end_of.end()) break;  // not run yet: this stage waits
          ready = std::max(ready, found->second);
        }
        const double cost = (op.pass == Pass::kForward ? forward_cost : backward_cost) /
                            shape.chunks;
        timeline[s].push_back(TimedOp{op, ready, ready + cost});
        end_of[key(s, op)] = free_at[s] = ready + cost;
        ++next[s];
        placed = true;
      }
    }
  }
  std::string stuck;
  for (int s = 0; s < p; ++s) {
    if (next[s] < orders[s].size()) {
      stuck += " stage " + std::to_string(s) + " at " +
               to_string(orders[s][next[s]], shape.chunks > 1) + ";";
    }
  }
  if (!stuck.empty()) {
    throw std::logic_error("the stages wait on each other in a cycle:" + stuck);
  }
  return timeline;
}

double bubble_fraction(const std::vector<std::vector<TimedOp>>& timeline) {
  double first = 0, last = 0, busy_total = 0;
  bool any = false;
  for (const auto& stage : timeline) {
    for (const auto& op : stage) {
      first = any ? std::min(first, op.start) : op.start;
      last = any ? std::max(last, op.end) : op.end;
      any = true;
      busy_total += op.end - op.start;
    }
  }
  if (!any || last <= first) return 0;
  const double stages = static_cast<double>(timeline.size());
  return 1.0 - busy_total / (stages * (last - first));
}

void enqueue_in_dependency_order(const PipelineShape& shape,
                                 const std::vector<std::vector<StageOp>>& schedules,
                                 const std::function<void(int stage, const StageOp& op)>& enqueue) {
  const int p = shape.stages;
  const int num_virtual = shape.virtual_stages();
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<std::vector<bool>> forward_enqueued(
      static_cast<std::size_t>(num_virtual), std::vector<bool>(static_cast<std::size_t>(shape.micro_batches)));
  std::vector<std::vector<bool>> backward_enqueued = forward_enqueued;
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      const auto& ops = schedules[static_cast<std::size_t>(s)];
      for (auto& n = next[static_cast<std::size_t>(s)]; n < ops.size(); ++n, progress = true) {
        const StageOp& op = ops[n];
        if (const auto before = dependency(shape, s, op)) {
          const int there = virtual_stage(shape, before->stage, before->op.chunk);
          const auto& done = before->op.pass == Pass::kForward ? forward_enqueued : backward_enqueued;
          if (!done[static_cast<std::size_t>(there)][static_cast<std::size_t>(op.micro_batch)]) break;
        }
        enqueue(s, op);
        const int here = virtual_stage(shape, s, op.chunk);
        (op.pass == Pass::kForward ? forward_enqueued : backward_enqueued)
            [static_cast<std::size_t>(here)][static_cast<std::size_t>(op.micro_batch)] = true;
      }
    }
  }
}

}  // namespace towers

// SPDX-License-Identifier: MIT
// Chapter 9 with the real model (--model cifar): the CIFAR-10 network's layers cut into
// stages that train it, micro-batch by micro-batch, in the schedule's order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "harness/checkpoint_dir.hpp"
#include "harness/training_run.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "parallel/pipeline_split.hpp"
#include "runtime/runtime.hpp"

namespace towers {

/// The flags --model cifar adds to the synthetic pipeline's.
struct CifarPipelineFlags {
  std::string split;        ///< --split: first layer of stages 1..p-1; empty: default_split
  int batch_size = 64;      ///< --batch-size B: m micro-batches of B/m
  int steps = 3;            ///< --steps
  std::uint64_t seed = 1;   ///< --seed: initialization and input, as chapter 1's
  std::string data_dir;     ///< --data-dir; empty: the embedded synthetic set
  std::string save_params;  ///< --save-params FILE: compare with chapter 1 --accumulate m
  CheckpointFlags checkpoints;  ///< chapter 1's --checkpoint-dir, --resume, ...
};

/// The run's flags (TrainingRun's) from --model cifar's: its steps, seed, data, batch,
/// --save-params and checkpoint flags; a log line every step.
TrainingFlags training_flags(const CifarPipelineFlags& flags);

/// The flags that need the real model (--split, --batch-size, --steps, --seed,
/// --data-dir, --save-params and the checkpoint flags): throws UsageError for the first
/// one given to --model synthetic, saying to add --model cifar.
void refuse_cifar_flags_in_synthetic(const CLI::App& app);

/// The split --model cifar runs with: --split, or default_split(). Throws UsageError,
/// before any device work, for what the real model cannot do: interleaved chunks, more
/// stages than layers, a batch not cut evenly into micro-batches, and the synthetic-only
/// flags (--kernel-ms, --backward-ratio, --probe, --skip-waits).
std::vector<StageLayers> cifar_split_or_refuse(const CLI::App& app, PipelineSchedule schedule,
                                               const PipelineShape& shape,
                                               const CifarPipelineFlags& flags, bool probe,
                                               bool skip_waits);

/// Trains `flags.steps` steps with the model cut at `split` into shape.stages stages,
/// prints per-stage busy time and the summary; returns the exit status. The variables are
/// a range per stage (StageVariables); `run`, made from training_flags(flags) before any
/// device work, starts them from its resumed state (parameters, moving averages, input
/// position, global step) when there is one, and saves a checkpoint when one is due,
/// chapter 1's cadence: the stages' ranges put together, so a checkpoint is the one
/// chapter 1 --accumulate m writes after the same steps, and either program resumes it.
int run_cifar_pipeline(Runtime& runtime, PipelineSchedule schedule, const PipelineShape& shape,
                       const std::vector<StageLayers>& split, const CifarPipelineFlags& flags,
                       TrainingRun& run, const TraceFiles& trace_files);

}  // namespace towers

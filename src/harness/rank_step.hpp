// SPDX-License-Identifier: MIT
// What the two programs of ranks (05_ranks and 06_overlap_ranks) do around their step, the
// same in both, written once: the job-wide trace on rank 0, the loss rank 0 logs, and the
// ranks' agreement to stop after the same step (each rank's variables are a RankVariables:
// parallel/one_device_variables.hpp). The
// step itself (chapter 5's one all-reduce, chapter 6's buckets) stays in each program.
// Introduced in chapter 5.
#pragma once

#include "harness/rank_checkpoints.hpp"
#include "harness/tower_training.hpp"
#include "mpi/mpi_job.hpp"
#include "mpi/watchdog.hpp"
#include "parallel/tower.hpp"
#include "runtime/memory.hpp"

namespace towers {

/// Has `training` gather every rank's spans to rank 0 for the timeline and the trace files,
/// put on rank 0's clock; rank 0 alone writes the files. A collective (the clocks are
/// compared now): every rank calls it once, before the loop.
void merge_rank_traces(TowerTraining& training, const MpiJob& job);

/// The loss rank 0 logs for step `run_step`: the last rank's, as chapter 4 logs its last
/// tower's (and TF its last tower's), broadcast under `watchdog`. Call on every rank after
/// the step's wait.
float last_rank_loss(const MpiJob& job, Watchdog& watchdog, Tower& tower, int run_step);

/// Whether the job stops after step `run_step`: true on every rank when any rank asked
/// (`stop_here`, a SIGINT or SIGTERM it got). A signal reaches the ranks maybe in different
/// steps; stopping alone, a rank would leave the others waiting in the next all-reduce. An
/// MPI_Allreduce (logical or) under `watchdog`, on every rank.
bool ranks_agree_to_stop(const MpiJob& job, Watchdog& watchdog, bool stop_here, int run_step);

}  // namespace towers

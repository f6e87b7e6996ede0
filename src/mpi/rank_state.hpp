// SPDX-License-Identifier: MIT
// Rank state: what chapter 5 needs to save and resume a job of ranks as chapter 1 saves
// and resumes one process — one folder, one writer, one file that resumes every rank.
//
// Rank 0 alone owns --checkpoint-dir: it settles the folder before step 0, reads the
// checkpoint to resume from, and writes every save. The other ranks may run on machines
// that do not even see that folder, so they never open it:
//   - settle_on_rank_zero() runs the settling on rank 0 and tells every rank how it went,
//     so a refused folder ends the whole job with rank 0's message instead of leaving
//     the other ranks waiting in their first collective for a rank that has left;
//   - broadcast_state() hands rank 0's resumed state (step, parameters, moving averages,
//     input position, the optimizer and its own state) to every rank;
//   - job_input_position() gathers every rank's input position to rank 0 for a save.
// Introduced in chapter 5.
#pragma once

#include <functional>
#include <optional>

#include "data/input_position.hpp"
#include "model/checkpoint.hpp"
#include "mpi/mpi_job.hpp"
#include "mpi/watchdog.hpp"

namespace towers {

/// Runs `settle` on rank 0 alone, then tells every rank whether it threw. If it did, every
/// rank throws a UsageError with rank 0's message (rank 0 rethrows its own exception), so
/// the job refuses as one: run_rank_program prints a usage error once, from rank 0, and
/// ends a failure of another kind with rank 0's message. A collective: every rank calls it.
void settle_on_rank_zero(const MpiJob& job, const std::function<void()>& settle);

/// Makes rank 0's `state` (a checkpoint it read, or nullopt) every rank's. A collective.
void broadcast_state(const MpiJob& job, std::optional<model::TrainingState>& state);

/// The job's input position for a checkpoint, from every rank's own (`mine`, its
/// iterator's position()), gathered to rank 0 under `watchdog` as the collective of step
/// `step`. Ranks read different shards, but of one sequence of global batches, so after
/// the same number of steps every rank stands at the same position (see
/// data::position_after): that one record restarts every rank's iterator, each again on
/// its own slice. Rank 0 checks this instead of trusting it, and throws std::logic_error
/// naming the ranks that stand elsewhere, because a resume from such a file would feed
/// them other data. Returns the position on rank 0; elsewhere `mine`. A collective.
data::InputPosition job_input_position(const MpiJob& job, const data::InputPosition& mine,
                                       Watchdog& watchdog, int step);

}  // namespace towers

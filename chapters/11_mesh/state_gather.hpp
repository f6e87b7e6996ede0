// SPDX-License-Identifier: MIT
// gather_state: the ranges of a training state that the ranks of one communicator hold,
// put together on its rank 0 in chapter 1's flat layout (MeshRank::put_together).
//
// A pipeline stage holds its range of the layers (the pipeline communicator's ranks tile
// the model), a ZeRO rank its shard of the moving averages and of --optimizer's state, at
// ZeRO-3 of the parameters too (the data communicator's ranks tile them), and below that
// every rank a copy of what it does not shard. Each array is one collective over the
// communicator: the ranks' ranges are gathered first (MPI_Allgather, so that every rank
// takes the same branch), then either each range lands in its place on rank 0
// (MPI_Gatherv) or, when every rank holds the array whole (equal copies), rank 0 keeps
// its own and nothing is sent. Used from the training thread of every rank, between steps.
// Introduced in chapter 11.
#pragma once

#include <mpi.h>

#include <vector>

#include "model/checkpoint.hpp"
#include "parallel/allreduce.hpp"  // Chunk

namespace towers {

/// Every rank of `comm` holds, in `mine` (chapter 1's layout: params and moving_averages
/// kNumParameters floats each, optimizer_state its parts one after another, `parts` of
/// them), the range `params_range` of the parameters and `state_range` of the moving
/// averages and of each optimizer part. On rank 0 of `comm`, `whole`'s params,
/// moving_averages and optimizer_state are resized and get every rank's ranges in their
/// places; elsewhere `whole` is left as it was. The ranks' ranges of an array must either
/// all be the whole array or tile it (std::logic_error on rank 0 otherwise: a checkpoint
/// with a hole in it is worse than none). A collective over `comm`.
void gather_state(MPI_Comm comm, const model::TrainingState& mine, Chunk params_range,
                  Chunk state_range, int parts, model::TrainingState& whole);

}  // namespace towers

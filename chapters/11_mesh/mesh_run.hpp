// SPDX-License-Identifier: MIT
// Chapter 11's composed run: `mpirun -n N 11_mesh --dp a --tp b --pp c` (a x b x c = N),
// one process per simulated device, one communicator per mesh dimension
// (mpi/mesh_ranks.hpp).
//
// What runs today: data x tensor x pipeline (a pipeline of at most 4 stages beside tensor
// parallelism), ZeRO-0 with SGD, momentum or Adam, ZeRO-1 beside tensor or pipeline
// parallelism or both and ZeRO-2 beside tensor parallelism (zero_one_update.hpp), ZeRO-1 to 3 on
// data parallelism alone, the host
// backend. Chapter 1's checkpoints are saved and resumed, the optimizer's state included,
// on the meshes chapter11_resume_test proves (mesh_checkpoint_problem).
// Each rank is tensor rank t of stage p of data replica d (mesh_rank.hpp).
// With t = p = 1 it is chapter 5's rank (its iterator reads the replica's shard, the whole
// model, the all-reduce of the gradients), or with --zero or momentum or Adam chapter 8's
// (sharded_rank.cpp: its shard of the state, the ring's two halves); with tp > 1 it holds chapter 10's slice for
// its tensor index, its replica's batch read on the host as chapter 10's ranks read
// theirs (the examples of chapter 5's shard d), g and f a ring over the tensor
// communicator, and then the slice's gradients averaged over the data communicator; with
// pp > 1 it is chapter 9's stage (stage_rank.cpp), its activations and gradients messages
// over the pipeline communicator, and beside tp > 1 its variables its tensor index's slice
// and chapter 10's split on the stage holding local3 and local4. Rank 0 prints the plan beside what the run measured:
// the ledger's peak bytes per category of the largest device, the bytes on the wire per
// step per dimension, gathered from every rank, and a pipeline's bubble read from the
// trace. Introduced in chapter 11.
#pragma once

#include <string>

#include "cli/summary.hpp"
#include "mesh_run_flags.hpp"
#include "mpi/fault_injection.hpp"
#include "mpi/mpi_job.hpp"
#include "parallel/mesh_plan.hpp"

namespace towers {

/// What the composed run cannot run yet, as a sentence that says what runs today and that
/// --plan prints the prediction; "" when `config` runs. The same on every rank.
std::string mesh_run_problem(const MeshConfig& config);

/// Why `config` cannot keep checkpoints (`checkpoints`: --checkpoint-dir and the resume
/// flags) yet, as a sentence saying what to do; "" when it can. A checkpoint of the mesh
/// holds the whole state (parameters, moving averages, --optimizer's own state, put
/// together from every rank's copy, slice, range or shard); the meshes whose every kind of
/// rank does that are a positive list, the ones chapter11_resume_test proves: data x
/// tensor x pipeline at ZeRO-0, data x tensor at ZeRO-0 to 2, data x pipeline at ZeRO-0
/// and 1, data alone at ZeRO-0 to 3, any optimizer (every mesh mesh_run_problem accepts today). Any
/// other mesh (--hybrid, or a kind of rank added later) is refused before it starts, since
/// its file might lack a part and resume a different run. The same on every rank.
std::string mesh_checkpoint_problem(const MeshConfig& config, const CheckpointFlags& checkpoints);

/// Throws UsageError, saying how to start the job, when `job` has not config.devices()
/// ranks (one process per device).
void check_mesh_job(const MeshConfig& config, const MpiJob& job);

/// Runs `config` on `job` (whose size must be config.devices(): UsageError otherwise) for
/// `flags.steps` steps, from --resume's checkpoint or --seed, saving chapter 1's
/// checkpoints (mesh_checkpoint.hpp); `faults` make one rank fail on purpose (chapter 5's
/// test hooks). Rank 0 prints the run's measurement and `plan_summary` (the plan's keys)
/// with the measured keys added. Returns the exit status.
int run_mesh(MpiJob& job, const MeshConfig& config, const MeshRunFlags& flags,
             const FaultFlags& faults, Summary plan_summary);

}  // namespace towers

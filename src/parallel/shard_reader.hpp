// SPDX-License-Identifier: MIT
// Reading sharded state back to the host (chapter 8).
//
// From ZeRO-1 on no tower holds all the moving averages (and with ZeRO-3 none holds all
// the parameters): tower i keeps only the range held[i] of them. A checkpoint,
// --save-params, --eval and the summary's hash need them whole (a checkpoint also needs
// --optimizer's velocity or moments, sharded the same way), so each tower's range is
// copied into its place of one host buffer. Unsharded state (every range the whole
// buffer) is read from tower 0 alone: the towers' copies are equal.
// Used from the training thread, between steps (after the step's synchronize).
#pragma once

#include <span>

#include "model/optimizer_state.hpp"
#include "parallel/allreduce.hpp"
#include "runtime/stream.hpp"

namespace towers {

/// Copies shards[i] (held[i].size floats on tower i's device) to host[held[i].offset ...]
/// on streams[i] and waits for each copy; stops after a tower whose range is the whole
/// `count`. Throws std::invalid_argument when the spans' sizes differ or the ranges do not
/// tile [0, count) in some order: a checkpoint with a hole in it is worse than none.
void read_shards(float* host, std::size_t count, std::span<float* const> shards,
                 std::span<const Chunk> held, std::span<Stream* const> streams);

/// The optimizer's own state of every tower, whole, for a checkpoint: each of its arrays
/// (OptimizerState::part: momentum's velocity; Adam's first, then second moments) read as
/// read_shards() reads the moving averages, into host[part * count ...]. `host` receives
/// states[0].parts() * count floats, TrainingState::optimizer_state's layout; nothing for
/// SGD. states[i] covers held[i]. Same throws as read_shards().
void read_optimizer_shards(float* host, std::size_t count, std::span<model::OptimizerState> states,
                           std::span<const Chunk> held, std::span<Stream* const> streams);

}  // namespace towers

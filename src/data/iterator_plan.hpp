// SPDX-License-Identifier: MIT
// Iterator plan: which examples each tower's iterator delivers, epoch by epoch.
//
// Shuffle, then shard. Every epoch has its own permutation of the dataset, drawn from
// (seed, epoch), so the same seed gives the same batches on every machine. The permutation
// is cut into *global batches* of num_towers x batch_size examples, and tower i takes
// slice i of each:
//
//   order:   | tower 0 | tower 1 | ... | tower T-1 | tower 0 | tower 1 | ... | dropped |
//            |<------ global batch 0 (step 0) ---->|<---- global batch 1 --->|  < T*B  |
//
// So within an epoch every example goes to exactly one tower, once; and T towers of batch
// B see, step by step, the same examples as one tower of batch T*B (the InputQueue of
// chapters 1-3 shuffles the same way). The tail of the permutation that cannot fill a
// batch for *every* tower (fewer than T*B examples) is dropped, like tf.data's
// batch(drop_remainder=True): all towers get the same number of batches per epoch, and
// the dropped examples change from epoch to epoch because the order does.
//
// Pure functions of their arguments: call them from any thread. Each tower's producer
// computes the permutation itself, so towers share no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "data/input_position.hpp"

namespace towers::data {

/// Checks that `examples` examples can give each of `num_towers` towers at least one
/// batch of `batch_size` per epoch. Throws UsageError, saying what to change, for zero or
/// negative counts, more towers than examples, or a batch larger than a tower's shard.
void check_sharding(std::size_t examples, int num_towers, int batch_size);

/// Batches each tower gets per epoch: examples / (num_towers * batch_size), rounded down.
/// Call check_sharding first; the result is then at least 1.
std::size_t batches_per_epoch(std::size_t examples, int num_towers, int batch_size);

/// The order of epoch `epoch`: a permutation of 0 .. examples - 1 (Fisher-Yates), the
/// same for the same (examples, seed, epoch) on every machine.
std::vector<std::size_t> epoch_order(std::size_t examples, std::uint64_t seed,
                                     std::uint64_t epoch);

/// The dataset indices of tower `tower`'s batch `batch` (0 .. batches_per_epoch - 1) in
/// an epoch whose order is `order`: positions (batch * num_towers + tower) * batch_size
/// onward, batch_size of them. A view into `order`.
std::span<const std::size_t> shard_batch(std::span<const std::size_t> order, int num_towers,
                                         int tower, int batch_size, std::size_t batch);

/// Where iterators of this shape stand after `steps` global batches, in the terms a
/// checkpoint records (InputPosition): epoch steps / batches_per_epoch, position
/// (steps % batches_per_epoch) * num_towers * batch_size. Every tower of the job stands at
/// the same position, since each takes one batch, its own slice, of every global batch.
InputPosition position_after(std::int64_t steps, std::size_t examples, int num_towers,
                             int batch_size, std::uint64_t seed);

/// The inverse of position_after(): how many global batches iterators of this shape had
/// taken to stand at `saved` (a checkpoint's position, also one of chapter 1's queue with
/// the same global batch, which may stand at the very end of an epoch). Throws UsageError
/// naming the flag to fix when `saved` was made with another seed, training set or global
/// batch, or lies between two batches or past the epoch's last batch (a damaged record).
std::int64_t steps_before(const InputPosition& saved, std::size_t examples, int num_towers,
                          int batch_size, std::uint64_t seed);

}  // namespace towers::data

// SPDX-License-Identifier: MIT
// Argument checks shared by the all-reduce implementations (internal to src/parallel).
//
// Both implementations are set up for one list of towers, each on a fixed device; these
// checks turn a mismatched call into a message that names the tower and what differed,
// instead of a copy from the wrong device's memory.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "parallel/allreduce.hpp"
#include "runtime/runtime.hpp"

namespace towers::detail {

/// Throws std::invalid_argument unless `device_of_tower` is not empty and names devices
/// of `runtime`. `who` ("ring", "nccl") starts the message.
void check_towers(std::string_view who, Runtime& runtime, std::span<const int> device_of_tower);

/// Throws std::invalid_argument unless there is one buffer and one stream per tower and
/// streams[i] runs on device device_of_tower[i].
void check_average_arguments(std::string_view who, std::span<const int> device_of_tower,
                             std::span<float* const> buffers, std::span<Stream* const> streams);

/// Throws std::invalid_argument unless `bucket` lies inside [0, count)
/// (ShardedCollectives::reduce_scatter_bucket).
void check_bucket(std::string_view who, std::size_t count, Chunk bucket);

}  // namespace towers::detail

// SPDX-License-Identifier: MIT
#include "parallel/shard_reader.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace towers {

namespace {

// True when the ranges, sorted, follow each other from 0 to count with no gap or overlap,
// or one of them is the whole buffer.
bool tile(std::size_t count, std::span<const Chunk> held) {
  std::vector<Chunk> sorted(held.begin(), held.end());
  if (std::any_of(sorted.begin(), sorted.end(),
                  [&](const Chunk& c) { return c.offset == 0 && c.size == count; })) {
    return true;
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const Chunk& a, const Chunk& b) { return a.offset < b.offset; });
  std::size_t next = 0;
  for (const Chunk& c : sorted) {
    if (c.offset != next) return false;
    next += c.size;
  }
  return next == count;
}

}  // namespace

void read_shards(float* host, std::size_t count, std::span<float* const> shards,
                 std::span<const Chunk> held, std::span<Stream* const> streams) {
  if (shards.size() != held.size() || shards.size() != streams.size() || shards.empty()) {
    throw std::invalid_argument("read_shards: " + std::to_string(shards.size()) + " shards, " +
                                std::to_string(held.size()) + " ranges and " +
                                std::to_string(streams.size()) + " streams; expected one each "
                                "per tower");
  }
  if (!tile(count, held)) {
    throw std::invalid_argument("read_shards: the towers' ranges do not cover the " +
                                std::to_string(count) + " elements exactly once");
  }
  for (std::size_t i = 0; i < shards.size(); ++i) {
    streams[i]->copy(host + held[i].offset, shards[i], held[i].size * sizeof(float));
    streams[i]->synchronize();
    if (held[i].offset == 0 && held[i].size == count) break;  // unsharded: one copy is all
  }
}

void read_optimizer_shards(float* host, std::size_t count, std::span<model::OptimizerState> states,
                           std::span<const Chunk> held, std::span<Stream* const> streams) {
  if (states.empty()) throw std::invalid_argument("read_optimizer_shards: no towers");
  // One array at a time, so each lands whole at its own offset: the file's layout
  // (all the first moments, then all the second) whatever the sharding was.
  for (int p = 0; p < states[0].parts(); ++p) {
    std::vector<float*> shards;
    for (model::OptimizerState& state : states) shards.push_back(state.part(p));
    read_shards(host + static_cast<std::size_t>(p) * count, count, shards, held, streams);
  }
}

}  // namespace towers

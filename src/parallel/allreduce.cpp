// SPDX-License-Identifier: MIT
// What every all-reduce shares: the interface's destructor, how a buffer is cut into
// chunks, and the argument checks.
#include "parallel/allreduce.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "parallel/allreduce_checks.hpp"

namespace towers {

AllReduce::~AllReduce() = default;
ShardedCollectives::~ShardedCollectives() = default;

Chunk ring_chunk(std::size_t count, int towers, int index) {
  // The first `extra` chunks hold one element more, so sizes differ by at most one and
  // the chunks tile [0, count) in order.
  const auto n = static_cast<std::size_t>(towers);
  const auto i = static_cast<std::size_t>(index);
  const std::size_t base = count / n;
  const std::size_t extra = count % n;
  return Chunk{i * base + (i < extra ? i : extra), base + (i < extra ? 1 : 0)};
}

Chunk overlap(Chunk a, Chunk b) {
  const std::size_t begin = std::max(a.offset, b.offset);
  const std::size_t end = std::min(a.offset + a.size, b.offset + b.size);
  return end > begin ? Chunk{begin, end - begin} : Chunk{begin, 0};
}

namespace detail {

void check_towers(std::string_view who, Runtime& runtime, std::span<const int> device_of_tower) {
  if (device_of_tower.empty()) {
    throw std::invalid_argument(std::string(who) + " all-reduce: needs at least one tower");
  }
  for (std::size_t i = 0; i < device_of_tower.size(); ++i) {
    const int device = device_of_tower[i];
    if (device < 0 || device >= runtime.device_count()) {
      throw std::invalid_argument(std::string(who) + " all-reduce: tower " + std::to_string(i) +
                                  " is on device " + std::to_string(device) +
                                  ", but the runtime has devices 0.." +
                                  std::to_string(runtime.device_count() - 1));
    }
  }
}

void check_average_arguments(std::string_view who, std::span<const int> device_of_tower,
                             std::span<float* const> buffers, std::span<Stream* const> streams) {
  const std::string prefix = std::string(who) + " all-reduce: ";
  if (buffers.size() != device_of_tower.size() || streams.size() != device_of_tower.size()) {
    throw std::invalid_argument(prefix + "set up for " + std::to_string(device_of_tower.size()) +
                                " towers but given " + std::to_string(buffers.size()) +
                                " buffers and " + std::to_string(streams.size()) + " streams");
  }
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const int device = streams[i]->device().index();
    if (device != device_of_tower[i]) {
      throw std::invalid_argument(prefix + "tower " + std::to_string(i) + " was set up on device " +
                                  std::to_string(device_of_tower[i]) + " but its stream is on device " +
                                  std::to_string(device));
    }
  }
}

void check_bucket(std::string_view who, std::size_t count, Chunk bucket) {
  if (bucket.offset > count || bucket.size > count - bucket.offset) {
    throw std::invalid_argument(std::string(who) + " reduce-scatter: the bucket of " +
                                std::to_string(bucket.size) + " elements from element " +
                                std::to_string(bucket.offset) + " does not lie inside the " +
                                std::to_string(count) + "-element buffer");
  }
}

}  // namespace detail
}  // namespace towers

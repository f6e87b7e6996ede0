// SPDX-License-Identifier: MIT
// mutant: compares the sizes of the first two buffers only
#include "ring_allreduce.hpp"

#include <stdexcept>

namespace towers::exercises {
namespace {

// index mod n, also for negative index (C++'s % keeps the sign of the dividend).
int wrap(int index, int n) { return ((index % n) + n) % n; }

// One step: every tower r receives chunk chunk_of(r) from its left neighbour and adds it
// in (reduce) or copies it over its own (gather). No tower sends, in the same step, a
// chunk it receives, so doing the N transfers one after the other is the same as at once.
template <typename ChunkOf>
void ring_step(Ring& ring, bool reduce, ChunkOf chunk_of) {
  const int n = ring.towers();
  const std::size_t count = ring.buffers[0].size();
  for (int r = 0; r < n; ++r) {
    const int left = wrap(r - 1, n), c = chunk_of(r);
    const Chunk chunk = ring_chunk(count, n, c);
    const float* src = ring.buffers[left].data() + chunk.offset;
    float* dst = ring.buffers[r].data() + chunk.offset;
    for (std::size_t j = 0; j < chunk.size; ++j) dst[j] = reduce ? dst[j] + src[j] : src[j];
    if (ring.on_transfer) ring.on_transfer(Transfer{left, r, c, reduce});
  }
}

}  // namespace

void reduce_scatter_step(Ring& ring, int step) {
  const int n = ring.towers();
  ring_step(ring, true, [&](int r) { return wrap(r - 1 - step, n); });
}

void all_gather_step(Ring& ring, int step) {
  const int n = ring.towers();
  ring_step(ring, false, [&](int r) { return wrap(r - step, n); });
}

void ring_allreduce(Ring& ring) {
  if (ring.buffers.empty()) throw std::invalid_argument("ring_allreduce: no buffers");
  const std::size_t count = ring.buffers[0].size();
  if (ring.buffers.size() > 1 && ring.buffers[1].size() != count) {
    throw std::invalid_argument("ring_allreduce: buffers of different sizes");
  }
  const int n = ring.towers();
  for (int s = 0; s < n - 1; ++s) reduce_scatter_step(ring, s);
  // Tower r now holds the full sum of chunk r+1: scale it once, to the mean.
  for (int r = 0; r < n; ++r) {
    const Chunk owned = ring_chunk(count, n, wrap(r + 1, n));
    for (std::size_t j = 0; j < owned.size; ++j) {
      ring.buffers[r][owned.offset + j] /= static_cast<float>(n);
    }
  }
  for (int s = 0; s < n - 1; ++s) all_gather_step(ring, s);
}

}  // namespace towers::exercises

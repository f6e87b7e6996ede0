// SPDX-License-Identifier: MIT
// WireBytes: the bytes chapter 8's collectives send from one device to another.
//
// ZeRO's claim about communication is a count of bytes: ZeRO-1 and ZeRO-2 move what the
// all-reduce moves, 2(N-1)/N of the parameters per tower and step, and ZeRO-3 half as much
// again (each layer is gathered for the forward and again for the backward pass). The
// ring and ZeRO-3's layer gathers add every copy they enqueue here, so a test can compare
// the count with the formula (zero_wire_bytes_per_step in zero_memory.hpp) byte for byte.
// A copy between two towers on the same device crosses no link and is not counted.
// Counted when the copy is enqueued (every enqueued copy runs); one host thread enqueues.
#pragma once

#include <cstddef>
#include <cstdint>

namespace towers {

/// A running count of the bytes copied between two different devices.
class WireBytes {
 public:
  /// Counts a copy of `bytes` from device `from` to device `to` (runtime indices).
  void add(int from, int to, std::size_t bytes) {
    if (from != to) total_ += bytes;
  }
  /// Bytes counted so far.
  std::uint64_t total() const { return total_; }

 private:
  std::uint64_t total_ = 0;
};

}  // namespace towers

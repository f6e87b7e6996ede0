// SPDX-License-Identifier: MIT
// Exercise 04: a sharded, prefetching iterator (the input of chapter 4, without devices).
//
// The tutorial's towers each dequeue a batch from a queue that background threads keep
// full. An iterator does the same job: a producer thread prepares the next steps while the
// towers compute, and each tower gets its own shard of every step.
//
//   producer thread                                 consumer (the training loop)
//   ---------------                                 ----------------------------
//   shuffle the epoch (seed, epoch)
//   cut the next step, one batch per shard
//   prepare(step)   (decode, distort; may throw)
//   wait for room, push  --> bounded queue (K) -->  next()
//
// Which examples. Epoch e is a permutation of 0..num_examples-1 that depends only on
// (seed, e): same seed, same order; another seed or another epoch, another order. Step s
// of an epoch takes the next num_shards * batch_size positions of that permutation (fewer
// at the end of the epoch); shard t gets positions [t * batch_size, (t + 1) * batch_size)
// of the step's slice, clipped to it, so at the end of an epoch a shard's batch may be
// short or empty. Every example is delivered exactly once per epoch, and epochs follow
// each other without end.
//
// Prefetch. The producer runs at most prefetch_depth (K) steps ahead of next(): it pushes
// a step only when fewer than K wait in the queue, then blocks until next() makes room.
// It calls prepare(step) BEFORE it waits for room (the slow work overlaps the consumer's),
// so with c steps taken it has prepared exactly c + K + 1 steps once it is blocked: K
// queued and one ready to push. The grader counts prepare() calls, not your bookkeeping.
//
// Threads and errors. One producer thread per iterator, started by the constructor.
// next() is called from one consumer thread at a time. The destructor stops the producer,
// also mid-epoch with a full queue, and joins it: no thread outlives the iterator. An
// exception thrown in the producer (by prepare) stops it; next() first returns the steps
// finished before it, then rethrows it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace towers::exercises {

/// One step's input: a batch of example indices per shard (tower).
struct Step {
  int epoch = 0;  ///< which epoch, from 0
  int index = 0;  ///< which step within the epoch, from 0
  /// shards[t]: tower t's batch, example indices in 0..num_examples-1; [num_shards][<= batch_size]
  std::vector<std::vector<std::size_t>> shards;
};

/// How to cut and shuffle the examples, and how far to run ahead.
struct IteratorOptions {
  std::size_t num_examples = 0;  ///< examples per epoch, at least 1
  int num_shards = 1;            ///< towers, T >= 1
  int batch_size = 1;            ///< examples per shard per step, >= 1
  int prefetch_depth = 2;        ///< K >= 1: steps the producer may have ready
  std::uint64_t seed = 0;        ///< the shuffle's seed
  /// The producer's work on a step before it waits for room and queues it (decode,
  /// distort). Called on the producer thread only. May throw anything.
  std::function<void(const Step&)> prepare;
};

/// Steps of shuffled, sharded example indices, made ahead by a producer thread.
class ShardedIterator {
 public:
  /// Starts the producer. Throws std::invalid_argument for options out of range.
  explicit ShardedIterator(IteratorOptions options);
  /// Stops the producer (even blocked on a full queue) and joins it.
  ~ShardedIterator();
  ShardedIterator(const ShardedIterator&) = delete;
  ShardedIterator& operator=(const ShardedIterator&) = delete;

  /// The next step, in order; blocks until the producer has made it. Rethrows the
  /// producer's exception once the steps made before it have been returned.
  Step next();

  /// Steps per epoch: ceil(num_examples / (num_shards * batch_size)).
  int steps_per_epoch() const;

 private:
  struct State;  // yours to define in stub.cpp: the queue, its lock, the thread, ...
  std::unique_ptr<State> state_;
};

}  // namespace towers::exercises

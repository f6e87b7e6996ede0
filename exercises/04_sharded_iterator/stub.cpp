// SPDX-License-Identifier: MIT
// Exercise 04 — your code goes here. See README.md and sharded_iterator.hpp.
#include "sharded_iterator.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include "exercises/todo.hpp"

namespace towers::exercises {

// Everything the producer and the consumer share. Add what you need.
struct ShardedIterator::State {
  IteratorOptions options;
  // TODO(1): the bounded queue of steps, a mutex and condition variable(s), a stop flag,
  //   the producer's exception (std::exception_ptr), and the producer's std::thread (declared last: it starts after everything it uses).
};

ShardedIterator::ShardedIterator(IteratorOptions options) : state_(std::make_unique<State>()) {
  if (options.num_examples < 1 || options.num_shards < 1 || options.batch_size < 1 ||
      options.prefetch_depth < 1) {
    throw std::invalid_argument("ShardedIterator: num_examples, num_shards, batch_size and "
                                "prefetch_depth must all be at least 1");
  }
  state_->options = std::move(options);
  // TODO(2): start the producer thread. It loops over epochs: shuffle 0..num_examples-1
  //   with an engine seeded from (seed, epoch); cut each step as sharded_iterator.hpp says;
  //   call options.prepare(step) when set, BEFORE waiting for room; wait until the queue
  //   has fewer than K steps (or stop); push; notify. Catch any exception, store it, notify, and return.
}

ShardedIterator::~ShardedIterator() {
  // TODO(3): set the stop flag under the lock, wake the producer, join it.
}

Step ShardedIterator::next() {
  // TODO(4): wait until a step is queued or the producer failed; pop and return the
  //   front step (and wake the producer: there is room now); else rethrow the exception.
  todo("exercise 04: write ShardedIterator in exercises/04_sharded_iterator/stub.cpp");
}

int ShardedIterator::steps_per_epoch() const {
  const IteratorOptions& o = state_->options;
  const std::size_t per_step = static_cast<std::size_t>(o.num_shards) * o.batch_size;
  return static_cast<int>((o.num_examples + per_step - 1) / per_step);
}

}  // namespace towers::exercises

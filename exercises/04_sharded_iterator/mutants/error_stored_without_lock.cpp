// SPDX-License-Identifier: MIT
// mutant: the producer stores its exception without the lock: a data race with next(), which reads it under the lock
#include "sharded_iterator.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>

namespace towers::exercises {

// Shared by the producer thread and the consumer; every field below `mutex` is guarded by it.
struct ShardedIterator::State {
  IteratorOptions options;
  std::mutex mutex;
  std::condition_variable ready;  // a step was queued, or the producer failed
  std::condition_variable room;   // a step was taken, or stop was set
  std::deque<Step> queue;         // at most options.prefetch_depth steps
  bool stop = false;              // set by the destructor
  std::exception_ptr error;       // what stopped the producer, if anything
  std::thread producer;           // last: started after everything it uses exists

  void produce();
  Step cut(const std::vector<std::size_t>& order, int epoch, int index) const;
};

ShardedIterator::ShardedIterator(IteratorOptions options) : state_(std::make_unique<State>()) {
  if (options.num_examples < 1 || options.num_shards < 1 || options.batch_size < 1 ||
      options.prefetch_depth < 1) {
    throw std::invalid_argument("ShardedIterator: num_examples, num_shards, batch_size and "
                                "prefetch_depth must all be at least 1");
  }
  state_->options = std::move(options);
  state_->producer = std::thread([state = state_.get()] { state->produce(); });
}

ShardedIterator::~ShardedIterator() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop = true;
  }
  state_->room.notify_all();  // a producer blocked on a full queue wakes up and returns
  state_->producer.join();
}

Step ShardedIterator::next() {
  std::unique_lock<std::mutex> lock(state_->mutex);
  // Waits for the producer: the one place the consumer blocks.
  state_->ready.wait(lock, [&] { return !state_->queue.empty() || state_->error; });
  if (state_->queue.empty()) std::rethrow_exception(state_->error);  // steps before it went first
  Step step = std::move(state_->queue.front());
  state_->queue.pop_front();
  lock.unlock();
  state_->room.notify_one();
  return step;
}

int ShardedIterator::steps_per_epoch() const {
  const IteratorOptions& o = state_->options;
  const std::size_t per_step = static_cast<std::size_t>(o.num_shards) * o.batch_size;
  return static_cast<int>((o.num_examples + per_step - 1) / per_step);
}

// Step `index` of an epoch: the next T*B positions of the epoch's order, B per shard.
Step ShardedIterator::State::cut(const std::vector<std::size_t>& order, int epoch, int index) const {
  const std::size_t b = static_cast<std::size_t>(options.batch_size);
  const std::size_t first = static_cast<std::size_t>(index) * options.num_shards * b;
  Step step{epoch, index, std::vector<std::vector<std::size_t>>(options.num_shards)};
  for (int t = 0; t < options.num_shards; ++t) {
    const std::size_t begin = std::min(first + t * b, order.size());
    const std::size_t end = std::min(begin + b, order.size());
    step.shards[t].assign(order.begin() + begin, order.begin() + end);
  }
  return step;
}

void ShardedIterator::State::produce() {
  try {
    std::vector<std::size_t> order(options.num_examples);
    const std::size_t per_step = static_cast<std::size_t>(options.num_shards) * options.batch_size;
    const int steps = static_cast<int>((options.num_examples + per_step - 1) / per_step);
    for (int epoch = 0;; ++epoch) {
      // The epoch's order depends only on (seed, epoch).
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::seed_seq seq{static_cast<std::uint32_t>(options.seed),
                        static_cast<std::uint32_t>(options.seed >> 32),
                        static_cast<std::uint32_t>(epoch)};
      std::mt19937_64 rng(seq);
      std::shuffle(order.begin(), order.end(), rng);
      for (int index = 0; index < steps; ++index) {
        Step step = cut(order, epoch, index);
        if (options.prepare) options.prepare(step);  // outside the lock: the slow part
        std::unique_lock<std::mutex> lock(mutex);
        // Waits for room: never more than prefetch_depth steps ahead of next().
        room.wait(lock, [&] {
          return stop || queue.size() < static_cast<std::size_t>(options.prefetch_depth);
        });
        if (stop) return;
        queue.push_back(std::move(step));
        lock.unlock();
        ready.notify_one();
      }
    }
  } catch (...) {
    error = std::current_exception();  // the mistake: "only this thread writes it"
    ready.notify_all();
  }
}

}  // namespace towers::exercises

// SPDX-License-Identifier: MIT
// Grader of exercise 04: a sharded, prefetching iterator. Prefetch is checked by counting
// steps, never by timing; a watchdog ends a test that hangs with one line saying where.
// Each test is one point.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sharded_iterator.hpp"

namespace towers::exercises {
namespace {

using namespace std::chrono_literals;

// Ends the process with one line if the test is still running after `limit`: a blocked
// next() or a destructor that never returns fails fast instead of hanging the grader.
class Watchdog {
 public:
  Watchdog(std::string what, std::chrono::seconds limit = 20s)
      : thread_([this, what = std::move(what), limit] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (!done_cv_.wait_for(lock, limit, [&] { return done_; })) {
            std::fprintf(stderr, "FAILED: expected %s within %llds, got no return; hint: a "
                                 "wait with no wake-up (notify after every push, pop, stop "
                                 "and error)\n",
                         what.c_str(), static_cast<long long>(limit.count()));
            std::fflush(stderr);
            std::_Exit(1);
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

// Threads of this process now (Linux: one entry per thread in /proc/self/task).
int thread_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// Polls `condition` every millisecond for up to 5 s; true once it holds.
bool eventually(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

IteratorOptions options(std::size_t n, int shards, int batch, std::uint64_t seed, int depth = 2) {
  IteratorOptions o;
  o.num_examples = n;
  o.num_shards = shards;
  o.batch_size = batch;
  o.seed = seed;
  o.prefetch_depth = depth;
  return o;
}

int expected_steps_per_epoch(std::size_t n, int shards, int batch) {
  const std::size_t per_step = static_cast<std::size_t>(shards) * batch;
  return static_cast<int>((n + per_step - 1) / per_step);
}

// The example indices of the next `epochs` epochs, in delivery order (shard 0 first).
std::vector<std::size_t> epochs_in_order(ShardedIterator& it, std::size_t n, int shards, int batch,
                                         int epochs) {
  std::vector<std::size_t> order;
  const int steps = expected_steps_per_epoch(n, shards, batch);
  for (int s = 0; s < epochs * steps; ++s) {
    Step step = it.next();
    for (const auto& shard : step.shards) order.insert(order.end(), shard.begin(), shard.end());
  }
  return order;
}

class ShardedEpochs : public ::testing::TestWithParam<int> {};

TEST_P(ShardedEpochs, DeliverEveryExampleExactlyOnce) {
  Watchdog watchdog("every next() to return");
  const int shards = GetParam(), batch = 5;
  const std::size_t n = 103;  // prime: the last step of an epoch is short for every T
  const int steps = expected_steps_per_epoch(n, shards, batch);
  ShardedIterator it(options(n, shards, batch, 1));
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<int> seen(n, 0);
    for (int s = 0; s < steps; ++s) {
      Step step = it.next();
      ASSERT_TRUE(step.epoch == epoch && step.index == s)
          << "expected step " << s << " of epoch " << epoch << ", got step " << step.index
          << " of epoch " << step.epoch << "; hint: an epoch has ceil(n / (T * B)) = " << steps
          << " steps, numbered from 0";
      ASSERT_EQ(step.shards.size(), static_cast<std::size_t>(shards))
          << "expected one batch per shard (" << shards << "), got " << step.shards.size()
          << "; hint: Step::shards[t] is tower t's batch";
      for (const auto& shard : step.shards) {
        for (std::size_t example : shard) {
          ASSERT_LT(example, n) << "expected example indices below " << n << ", got " << example
                                << "; hint: shuffle the indices 0..n-1";
          ++seen[example];
        }
      }
    }
    for (std::size_t e = 0; e < n; ++e) {
      ASSERT_EQ(seen[e], 1) << "expected example " << e << " exactly once in epoch " << epoch
                            << " across " << shards << " shards, got " << seen[e]
                            << " times; hint: cut one shuffled permutation per epoch into "
                               "consecutive slices, shard t taking slice t of each step";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, ShardedEpochs, ::testing::Range(1, 5),
                         [](const auto& info) { return "T" + std::to_string(info.param); });

TEST(ShardedIterator, SameSeedGivesTheSameOrder) {
  Watchdog watchdog("every next() to return");
  ShardedIterator a(options(60, 2, 4, 7)), b(options(60, 2, 4, 7));
  EXPECT_TRUE(epochs_in_order(a, 60, 2, 4, 3) == epochs_in_order(b, 60, 2, 4, 3))
      << "expected two iterators with seed 7 to deliver the same 3 epochs, got different "
         "orders; hint: seed the shuffle from (seed, epoch) only, never from the clock or "
         "std::random_device";
}

TEST(ShardedIterator, DifferentSeedGivesADifferentOrder) {
  Watchdog watchdog("every next() to return");
  ShardedIterator a(options(60, 2, 4, 7)), b(options(60, 2, 4, 8));
  EXPECT_TRUE(epochs_in_order(a, 60, 2, 4, 1) != epochs_in_order(b, 60, 2, 4, 1))
      << "expected seeds 7 and 8 to shuffle epoch 0 differently, got the same order; hint: "
         "use options.seed in the shuffle's engine";
}

TEST(ShardedIterator, ReshufflesEveryEpoch) {
  Watchdog watchdog("every next() to return");
  ShardedIterator it(options(60, 3, 4, 5));
  const std::vector<std::size_t> two = epochs_in_order(it, 60, 3, 4, 2);
  const std::vector<std::size_t> first(two.begin(), two.begin() + 60), second(two.begin() + 60, two.end());
  EXPECT_TRUE(first != second && std::set<std::size_t>(second.begin(), second.end()).size() == 60)
      << "expected epoch 1 to be a new permutation of the 60 examples, got "
      << (first == second ? "epoch 0's order again" : "repeated examples")
      << "; hint: seed each epoch's shuffle from (seed, epoch)";
}

TEST(ShardedIterator, CutsFullBatchesUntilTheEpochEnds) {
  Watchdog watchdog("every next() to return");
  // 17 examples, 3 shards of 4: step 0 takes 12, step 1 the last 5 as batches of 4, 1, 0.
  ShardedIterator it(options(17, 3, 4, 3));
  const std::vector<std::vector<std::size_t>> sizes = {{4, 4, 4}, {4, 1, 0}, {4, 4, 4}};
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    Step step = it.next();
    std::vector<std::size_t> got;
    for (const auto& shard : step.shards) got.push_back(shard.size());
    std::string text;
    for (std::size_t g : got) text += std::to_string(g) + " ";
    EXPECT_TRUE(got == sizes[s]) << "expected step " << s << " (17 examples, 3 shards of 4) to "
                                 << "have batches of " << sizes[s][0] << " " << sizes[s][1] << " "
                                 << sizes[s][2] << ", got " << text
                                 << "; hint: shard t takes positions [t*B, (t+1)*B) of the "
                                    "step's slice, clipped at the end of the epoch";
  }
}

TEST(ShardedIterator, PrefetchRunsKStepsAheadAndNoFurther) {
  Watchdog watchdog("every next() to return");
  const int depth = 3;
  ShardedIterator it(options(1000, 2, 4, 9, depth));
  ASSERT_TRUE(eventually([&] { return it.produced() == depth; }))
      << "expected the producer to queue K = " << depth << " steps before any next(), got "
      << it.produced() << " after 5 s; hint: start the producer in the constructor and count "
                          "every push in produced()";
  std::this_thread::sleep_for(50ms);  // room for a wrong producer to run further
  ASSERT_EQ(it.produced(), static_cast<std::size_t>(depth))
      << "expected the producer to stop at K = " << depth << " queued steps, got "
      << it.produced() << "; hint: wait for room while the queue holds prefetch_depth steps";
  it.next();
  ASSERT_TRUE(eventually([&] { return it.produced() == depth + 1; }))
      << "expected one more step produced after one next() (" << depth + 1 << "), got "
      << it.produced() << "; hint: next() must wake the producer when it makes room";
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(it.produced(), static_cast<std::size_t>(depth + 1))
      << "expected the producer to stay K = " << depth << " steps ahead of next(), got "
      << it.produced() << " produced after 1 next(); hint: bound the queue by prefetch_depth";
}

TEST(ShardedIterator, DestructorMidEpochStopsAndJoinsTheProducer) {
  Watchdog watchdog("the destructor to return while the producer waits on a full queue");
  const int before = thread_count();
  {
    ShardedIterator it(options(1000, 4, 8, 2, 2));
    const int during = thread_count();
    ASSERT_EQ(during, before + 1) << "expected one producer thread while the iterator lives, got "
                                  << during - before << "; hint: start one std::thread in the "
                                     "constructor";
    it.next();  // mid-epoch, and the producer soon blocks on a full queue
    ASSERT_TRUE(eventually([&] { return it.produced() == 3; }))
        << "expected 3 steps produced (1 taken + K = 2 queued), got " << it.produced()
        << "; hint: count every push";
  }
  const int after = thread_count();
  EXPECT_EQ(after, before) << "expected no thread left after the iterator is destroyed, got "
                           << after - before << " more than before; hint: set stop, notify the "
                              "producer's condition variable, join() (never detach())";
}

TEST(ShardedIterator, NextRethrowsTheProducersException) {
  Watchdog watchdog("next() to return or throw after the producer failed");
  IteratorOptions o = options(100, 2, 5, 4);
  o.prepare = [](const Step& step) {
    if (step.epoch == 0 && step.index == 3) throw std::runtime_error("corrupt record in step 3");
  };
  ShardedIterator it(o);
  for (int s = 0; s < 3; ++s) {
    Step step = it.next();
    ASSERT_EQ(step.index, s) << "expected step " << s << " (made before the failure), got step "
                             << step.index << "; hint: return the queued steps before the error";
  }
  try {
    Step step = it.next();
    ADD_FAILURE() << "expected next() to rethrow the producer's std::runtime_error, got step "
                  << step.index << "; hint: catch in the producer, store std::current_exception(), "
                                   "std::rethrow_exception in next()";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "corrupt record in step 3")
        << "expected the producer's own exception, got '" << e.what()
        << "'; hint: rethrow the stored std::exception_ptr, do not make a new one";
  }
}

}  // namespace
}  // namespace towers::exercises

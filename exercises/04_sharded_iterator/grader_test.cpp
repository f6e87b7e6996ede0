// SPDX-License-Identifier: MIT
// Grader of exercise 04: a sharded, prefetching iterator. Prefetch is checked by counting
// steps, never by timing; a watchdog ends a test that hangs with one line saying where.
// Each test is one point.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
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

// How long a test may run before the watchdog ends it: 20 s, or TOWERS_GRADER_WATCHDOG_S
// (CI's mutant check sets a few seconds: a hanging mutant then costs little).
std::chrono::seconds watchdog_limit() {
  const char* text = std::getenv("TOWERS_GRADER_WATCHDOG_S");
  const int seconds = text ? std::atoi(text) : 0;
  return std::chrono::seconds(seconds > 0 ? seconds : 20);
}

// Ends the process with one line if the test is still running after the limit: a blocked
// next() or a destructor that never returns fails fast instead of hanging the grader. The
// hint names what most likely blocks in that test.
class Watchdog {
 public:
  Watchdog(std::string what, std::string hint = "a wait with no wake-up (notify after every "
                                                "push and pop, and when the producer fails), "
                                                "or a producer that never pushes (it pushes "
                                                "while fewer than K steps are queued)")
      : thread_([this, what = std::move(what), hint = std::move(hint)] {
          const std::chrono::seconds limit = watchdog_limit();
          std::unique_lock<std::mutex> lock(mutex_);
          if (!done_cv_.wait_for(lock, limit, [&] { return done_; })) {
            std::fprintf(stderr, "FAILED: expected %s within %llds, got no return; hint: %s\n",
                         what.c_str(), static_cast<long long>(limit.count()), hint.c_str());
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
  EXPECT_EQ(it.steps_per_epoch(), steps)
      << "expected steps_per_epoch() == ceil(" << n << " / (" << shards << " * " << batch
      << ")) = " << steps << ", got " << it.steps_per_epoch() << "; hint: round up: the last "
      << "step of an epoch may be short";
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

// The grader's own record of the producer's work. prepare() is the grader's callback, so
// counting its calls, and the threads that make them, needs nothing from the student's
// code (no self-reported counter). The contract calls prepare(step) before the producer
// waits for room, so with c steps taken and K queued, c + K + 1 steps have been prepared.
class PrepareLog {
 public:
  std::function<void(const Step&)> callback() {
    return [this](const Step&) {
      std::lock_guard<std::mutex> lock(mutex_);
      threads_.push_back(std::this_thread::get_id());
    };
  }
  std::size_t calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return threads_.size();
  }
  // "" when every call came from one thread other than `consumer`; else what was wrong.
  std::string threads_problem(std::thread::id consumer) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::thread::id id : threads_) {
      if (id == consumer) return "prepare() ran on the thread that calls next()";
      if (id != threads_.front()) return "prepare() ran on more than one thread";
    }
    return "";
  }

 private:
  std::mutex mutex_;
  std::vector<std::thread::id> threads_;
};

// Waits until `log` has at least `expected` calls, gives a wrong producer 50 ms to run
// further, then expects exactly `expected`: K steps queued and one waiting for room.
void expect_prepared_ahead(PrepareLog& log, std::size_t expected, int taken, int depth) {
  const bool reached = eventually([&] { return log.calls() >= expected; });
  if (reached) std::this_thread::sleep_for(50ms);
  const std::size_t calls = log.calls();
  EXPECT_EQ(calls, expected)
      << "expected " << expected << " steps prepared after " << taken << " next() with K = "
      << depth << " (" << depth << " queued, one waiting for room), got " << calls << "; hint: "
      << (calls < expected
              ? "start the producer in the constructor and let it push until K steps wait "
                "(the queue bound is K, not K-1), and wake it in next() after every pop"
              : calls == expected + 1
                    ? "the queue is one step too deep: push only while queue.size() < K "
                      "(not <= K)"
                    : "the queue is unbounded: wait for room while K steps are queued");
}

TEST(ShardedIterator, PrefetchRunsKStepsAheadAndNoFurther) {
  Watchdog watchdog("every next() to return");
  for (int depth : {1, 3}) {
    SCOPED_TRACE("K = " + std::to_string(depth));
    PrepareLog log;  // outlives the iterator, whose producer calls it
    IteratorOptions o = options(1000, 2, 4, 9, depth);
    o.prepare = log.callback();
    ShardedIterator it(o);
    expect_prepared_ahead(log, depth + 1, 0, depth);
    for (int taken = 1; taken <= 2; ++taken) {
      it.next();
      expect_prepared_ahead(log, depth + 1 + taken, taken, depth);
    }
    const std::string problem = log.threads_problem(std::this_thread::get_id());
    EXPECT_TRUE(problem.empty()) << "expected every prepare() on the one producer thread, got: "
                                 << problem << "; hint: the constructor starts one std::thread "
                                    "that makes and prepares every step";
  }
}

TEST(ShardedIterator, DestructorMidEpochStopsAndJoinsTheProducer) {
  Watchdog watchdog("the destructor to return while the producer waits on a full queue",
                    "the destructor must set stop under the lock, notify the condition "
                    "variable the producer waits on for room (notify_all), then join()");
  const int before = thread_count();
  {
    PrepareLog log;
    IteratorOptions o = options(1000, 4, 8, 2, 2);
    o.prepare = log.callback();
    ShardedIterator it(o);
    const int during = thread_count();
    ASSERT_EQ(during, before + 1) << "expected one producer thread while the iterator lives, got "
                                  << during - before << "; hint: start one std::thread in the "
                                     "constructor";
    it.next();  // mid-epoch, and the producer soon blocks on a full queue
    ASSERT_TRUE(eventually([&] { return log.calls() >= 4; }))
        << "expected 4 steps prepared (1 taken, K = 2 queued, 1 waiting for room), got "
        << log.calls() << "; hint: next() must wake the producer when it makes room";
  }
  const int after = thread_count();
  EXPECT_EQ(after, before) << "expected no thread left after the iterator is destroyed, got "
                           << after - before << " more than before; hint: set stop, notify the "
                              "producer's condition variable, join() (never detach())";
}

TEST(ShardedIterator, NextReturnsWhileTheProducerPrepares) {
  // prepare() is the slow part (decoding, augmenting): the producer must call it without
  // the queue's lock, so that next() can take a queued step meanwhile. The grader's
  // prepare(step 2), with K = 2 steps queued, waits until next() has returned a step (or
  // 3 s): a producer that holds the lock in prepare() blocks next() until then, whatever
  // the timing.
  Watchdog watchdog("next() to return while the producer is inside prepare()",
                    "call prepare() before taking the lock, as the contract's order says");
  auto inside = std::make_shared<std::atomic<bool>>(false);
  auto next_returned_meanwhile = std::make_shared<std::atomic<bool>>(false);
  std::promise<void> taken;
  IteratorOptions o = options(1000, 2, 4, 3, 2);
  o.prepare = [inside, next_returned_meanwhile, go = taken.get_future().share()](const Step& step) {
    if (step.epoch != 0 || step.index != 2) return;
    inside->store(true);
    next_returned_meanwhile->store(go.wait_for(3s) == std::future_status::ready);
  };
  {
    ShardedIterator it(o);
    ASSERT_TRUE(eventually([&] { return inside->load(); }))
        << "expected the producer to prepare step 2 with K = 2 and no next(), got no call "
           "after 5 s; hint: start the producer in the constructor, prepare every step it makes";
    const Step first = it.next();
    taken.set_value();
    EXPECT_EQ(first.index, 0) << "expected step 0 first, got step " << first.index;
  }  // joined: the producer's prepare() has returned
  EXPECT_TRUE(next_returned_meanwhile->load())
      << "expected next() to return a queued step while the producer was inside prepare(), "
         "got next() blocked until prepare() returned; hint: call prepare(step) before "
         "locking the queue's mutex, and lock it only to wait for room and push";
}

TEST(ShardedIterator, DestructorReturnsOnlyAfterTheProducerHasFinished) {
  // The producer is held inside prepare(step 1) (the grader's callback, which lets it go
  // after 1 s) when the iterator is destroyed. A destructor that joins cannot return
  // before prepare() has: whatever the timing, the producer is done when it returns. One
  // that detaches returns at once, the producer still running on state about to be freed.
  Watchdog watchdog("the destructor to return once the producer's prepare() returned",
                    "set stop under the lock, notify the producer, join() it");
  auto inside = std::make_shared<std::atomic<bool>>(false);
  auto finished = std::make_shared<std::atomic<bool>>(false);
  std::promise<void> release;
  IteratorOptions o = options(1000, 4, 8, 2, 2);
  o.prepare = [inside, finished, go = release.get_future().share()](const Step& step) {
    if (step.epoch != 0 || step.index != 1) return;
    inside->store(true);
    go.wait_for(1s);
    finished->store(true);
  };
  {
    ShardedIterator it(o);
    ASSERT_TRUE(eventually([&] { return inside->load(); }))
        << "expected the producer to prepare step 1 with K = 2 and no next(), got no call "
           "after 5 s; hint: start the producer in the constructor, prepare every step it makes";
  }
  const bool producer_finished = finished->load();
  release.set_value();
  EXPECT_TRUE(producer_finished)
      << "expected the destructor to return only after the producer thread finished (it was "
         "inside prepare()), got it returning while the producer still ran; hint: join() the "
         "producer thread, never detach() it: a detached thread runs on after the iterator's "
         "state is freed";
}

// Thrown by the grader's prepare(): not a std::exception, so only `catch (...)` and
// std::current_exception() carry it to next(), and a new exception cannot pass for it.
struct CorruptRecord {
  int step;
};

// While a test runs: an exception that leaves the producer thread ends the process through
// std::terminate; this handler first prints the failure line with its hint.
[[noreturn]] void producer_let_an_exception_escape() {
  std::fprintf(stderr, "FAILED: expected the producer to catch prepare()'s exception, got "
                       "std::terminate (an exception left the producer thread); hint: catch "
                       "(...) in the producer, not only std::exception: prepare() may throw "
                       "any type\n");
  std::abort();
}
struct TerminateHint {
  std::terminate_handler previous = std::set_terminate(producer_let_an_exception_escape);
  ~TerminateHint() { std::set_terminate(previous); }
};

TEST(ShardedIterator, NextRethrowsTheProducersException) {
  const TerminateHint terminate_hint;
  Watchdog watchdog("next() to return or throw after the producer failed",
                    "when the producer fails, store std::current_exception() under the lock "
                    "and notify the consumer's condition variable before the thread returns");
  // K = 8: steps 0..2 are queued before prepare(step 3) throws, and next() is called only
  // after it threw, so the steps made before the error must come out first.
  IteratorOptions o = options(100, 2, 5, 4, 8);
  auto threw = std::make_shared<std::atomic<bool>>(false);
  o.prepare = [threw](const Step& step) {
    if (step.epoch == 0 && step.index == 3) {
      threw->store(true);
      throw CorruptRecord{3};
    }
  };
  ShardedIterator it(o);
  ASSERT_TRUE(eventually([&] { return threw->load(); }))
      << "expected the producer to prepare step 3 with K = 8 and no next(), got no call after "
         "5 s; hint: start the producer in the constructor, prepare every step it makes";
  std::this_thread::sleep_for(20ms);  // the producer stores the error and stops
  for (int s = 0; s < 3; ++s) {
    Step step;
    try {
      step = it.next();
    } catch (...) {
      FAIL() << "expected step " << s << " (made before the failure), got the producer's "
             << "exception; hint: next() returns the queued steps first, and rethrows the "
             << "error only once the queue is empty";
    }
    ASSERT_EQ(step.index, s) << "expected step " << s << " (made before the failure), got step "
                             << step.index << "; hint: return the queued steps before the error";
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      Step step = it.next();
      ADD_FAILURE() << "expected next() to rethrow the producer's exception, got step "
                    << step.index << "; hint: catch (...) in the producer, store "
                                     "std::current_exception(), std::rethrow_exception in next()";
    } catch (const CorruptRecord& e) {
      EXPECT_EQ(e.step, 3) << "expected the exception thrown by prepare(step 3), got one from "
                           << "step " << e.step << "; hint: rethrow the stored exception_ptr";
    } catch (const std::exception& e) {
      ADD_FAILURE() << "expected next() to rethrow prepare()'s own exception (a CorruptRecord, "
                       "which is no std::exception), got a std::exception: " << e.what()
                    << "; hint: catch (...), keep std::current_exception() and rethrow it with "
                       "std::rethrow_exception: do not make a new exception";
      return;
    } catch (...) {
      ADD_FAILURE() << "expected next() to rethrow prepare()'s CorruptRecord, got another "
                       "exception; hint: rethrow the stored std::exception_ptr unchanged";
      return;
    }
  }
}

// The first epoch's order of an iterator (2 shards of 4 over 60 examples).
std::vector<std::size_t> epoch_order(std::uint64_t seed, int epoch) {
  ShardedIterator it(options(60, 2, 4, seed));
  const std::vector<std::size_t> all = epochs_in_order(it, 60, 2, 4, epoch + 1);
  return std::vector<std::size_t>(all.end() - 60, all.end());
}

TEST(ShardedIterator, NoTwoSeedAndEpochPairsShareAnOrder) {
  Watchdog watchdog("every next() to return");
  // Pairs that a shortcut combining seed and epoch into one number maps together:
  // seed + epoch, seed ^ epoch, seed - epoch, and the seed cut to 32 bits.
  struct Pair {
    std::uint64_t seed_a;
    int epoch_a;
    std::uint64_t seed_b;
    int epoch_b;
    const char* shortcut;
  };
  const std::uint64_t high = std::uint64_t{1} << 32;
  for (const Pair& p : {Pair{7, 1, 8, 0, "seed + epoch"}, Pair{7, 1, 6, 0, "seed ^ epoch"},
                        Pair{8, 1, 7, 2, "seed + epoch"}, Pair{9, 0, 8, 1, "seed ^ epoch, seed + epoch"},
                        Pair{7, 1, 8, 2, "seed - epoch"}, Pair{5, 0, 5 + high, 0, "a seed cut to 32 bits"},
                        Pair{5, 1, 5 + high, 1, "a seed cut to 32 bits"}}) {
    EXPECT_TRUE(epoch_order(p.seed_a, p.epoch_a) != epoch_order(p.seed_b, p.epoch_b))
        << "expected (seed " << p.seed_a << ", epoch " << p.epoch_a << ") and (seed " << p.seed_b
        << ", epoch " << p.epoch_b << ") to shuffle differently, got the same order; hint: "
        << "seeding with " << p.shortcut << " maps them together: give the engine both, e.g. "
           "std::seed_seq{seed low 32 bits, seed high 32 bits, epoch}";
  }
}

}  // namespace
}  // namespace towers::exercises

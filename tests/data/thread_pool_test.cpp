// SPDX-License-Identifier: MIT
// Tests for thread_pool.hpp: every task runs once, callers on several threads share the
// pool, and a task's exception reaches the caller after all tasks have finished.
#include "data/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/backend.hpp"

namespace towers::data {
namespace {

TEST(ThreadPool, RunsEveryTaskOnceAndWaitsForAll) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3);
  std::vector<int> runs(100, 0);  // each task writes its own element
  pool.parallel_for(runs.size(), [&](std::size_t i) { ++runs[i]; });
  for (int r : runs) EXPECT_EQ(r, 1);
  pool.parallel_for(0, [](std::size_t) { FAIL() << "no task for count 0"; });
}

TEST(ThreadPool, CallersOnSeveralThreadsShareIt) {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] { pool.parallel_for(50, [&](std::size_t) { ++total; }); });
  }
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(total.load(), 200);
}

TEST(ThreadPool, RethrowsATaskErrorAfterEveryTaskHasRun) {
  ThreadPool pool(2);
  std::atomic<int> finished{0};
  EXPECT_THROW(pool.parallel_for(20,
                                 [&](std::size_t i) {
                                   ++finished;
                                   if (i == 3) throw std::runtime_error("task 3 failed");
                                 }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 20);
}

TEST(ThreadPool, ZeroThreadsIsAUsageError) { EXPECT_THROW(ThreadPool(0), UsageError); }

}  // namespace
}  // namespace towers::data

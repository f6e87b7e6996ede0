// SPDX-License-Identifier: MIT
// ThreadPool (base/thread_pool.hpp), both ways of handing it work. run(): every task once,
// on the pool's threads only. parallel_for(): contiguous parts that cover the range once,
// the caller running the first, no more parts than threads allowed nor shorter than the
// minimum. Both: nested calls inline, errors after every piece has ended, several callers
// at once (ThreadSanitizer checks these in CI), growing while in use.
#include "base/thread_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "base/usage_error.hpp"

namespace towers::base {
namespace {

// The [begin, end) ranges parallel_for handed out, and the threads that ran them.
struct Record {
  std::mutex mutex;
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  std::set<std::thread::id> threads;

  void run(ThreadPool& pool, std::int64_t n, std::int64_t min_part, int parts) {
    pool.parallel_for(n, min_part, parts, [this](std::int64_t begin, std::int64_t end) {
      std::lock_guard lock(mutex);
      ranges.emplace_back(begin, end);
      threads.insert(std::this_thread::get_id());
    });
    std::sort(ranges.begin(), ranges.end());
  }
};

TEST(ThreadPool, RunCallsEveryTaskOnceOnPoolThreadsAndWaitsForAll) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3);
  std::vector<int> runs(100, 0);  // each task writes its own element
  std::mutex mutex;
  std::set<std::thread::id> threads;
  pool.run(runs.size(), [&](std::size_t i) {
    ++runs[i];
    std::lock_guard lock(mutex);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(runs, std::vector<int>(100, 1));
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u) << "the caller only waits";
  EXPECT_LE(threads.size(), 3u);
  pool.run(0, [](std::size_t) { FAIL() << "no task for count 0"; });
}

TEST(ThreadPool, PartsCoverTheRangeOnceInContiguousPieces) {
  ThreadPool pool(6);
  for (int parts : {1, 2, 3, 7}) {
    for (std::int64_t n : {1, 2, 5, 64, 1000, 1001}) {
      Record r;
      r.run(pool, n, 1, parts);
      ASSERT_FALSE(r.ranges.empty());
      EXPECT_EQ(r.ranges.front().first, 0) << "parts=" << parts << " n=" << n;
      EXPECT_EQ(r.ranges.back().second, n) << "parts=" << parts << " n=" << n;
      for (std::size_t i = 1; i < r.ranges.size(); ++i) {
        EXPECT_EQ(r.ranges[i].first, r.ranges[i - 1].second) << "gap or overlap, n=" << n;
        const std::int64_t a = r.ranges[i].second - r.ranges[i].first;
        const std::int64_t b = r.ranges[0].second - r.ranges[0].first;
        EXPECT_LE(std::max(a, b) - std::min(a, b), 1) << "uneven parts, n=" << n;
      }
      // As many parts as allowed, unless there are fewer elements.
      EXPECT_EQ(r.ranges.size(), static_cast<std::size_t>(std::min<std::int64_t>(parts, n)));
    }
  }
  Record nothing;
  nothing.run(pool, 0, 1, 4);
  EXPECT_TRUE(nothing.ranges.empty());
}

TEST(ThreadPool, TheCallerRunsOnePartAndThePoolTheOthers) {
  ThreadPool pool(2);
  Record r;
  r.run(pool, 3000, 1, 3);
  // One pool thread may take both of the others if it is quicker than the other to wake.
  EXPECT_EQ(r.threads.count(std::this_thread::get_id()), 1u);
  EXPECT_GE(r.threads.size(), 2u);
  EXPECT_LE(r.threads.size(), 3u);
  Record alone;
  alone.run(pool, 3000, 1, 1);
  EXPECT_EQ(alone.threads, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(ThreadPool, MinimumPartLimitsTheNumberOfParts) {
  ThreadPool pool(3);
  Record r;
  r.run(pool, 1000, 400, 4);  // room for two parts of >= 400, not four
  ASSERT_EQ(r.ranges.size(), 2u);
  for (const auto& [begin, end] : r.ranges) EXPECT_GE(end - begin, 400);
  Record small;
  small.run(pool, 300, 400, 4);  // smaller than one part: runs whole, on the caller
  EXPECT_EQ(small.ranges.size(), 1u);
}

TEST(ThreadPool, NestedCallsRunInlineOnTheCallingThread) {
  ThreadPool pool(2);
  std::atomic<int> inner_parts{0}, inner_tasks{0}, elsewhere{0};
  pool.parallel_for(2, 1, 2, [&](std::int64_t, std::int64_t) {
    const auto outer = std::this_thread::get_id();
    EXPECT_TRUE(ThreadPool::inside_work());
    pool.parallel_for(1000, 1, 3, [&](std::int64_t, std::int64_t) {
      ++inner_parts;
      if (std::this_thread::get_id() != outer) ++elsewhere;
    });
  });
  EXPECT_EQ(inner_parts.load(), 2);  // one per outer part: the inner calls did not split
  // A task that hands work to a pool (its own, or another) runs it itself, in order:
  // with one thread, waiting on the pool instead would never end.
  ThreadPool one(1);
  ThreadPool other(1);
  one.run(2, [&](std::size_t) {
    const auto outer = std::this_thread::get_id();
    std::size_t expected = 0;
    for (ThreadPool* p : {&one, &other}) {
      p->run(3, [&](std::size_t i) {
        EXPECT_EQ(i, expected++ % 3);
        ++inner_tasks;
        if (std::this_thread::get_id() != outer) ++elsewhere;
      });
    }
  });
  EXPECT_EQ(inner_tasks.load(), 12);
  EXPECT_EQ(elsewhere.load(), 0);
  EXPECT_FALSE(ThreadPool::inside_work());  // the caller's part did not leave it set
}

TEST(ThreadPool, AnErrorIsRethrownAfterEveryPieceEnded) {
  ThreadPool pool(2);
  std::atomic<int> finished{0};
  EXPECT_THROW(pool.run(20,
                        [&](std::size_t i) {
                          std::this_thread::sleep_for(std::chrono::milliseconds(1));
                          ++finished;
                          if (i == 3) throw std::runtime_error("task 3 failed");
                        }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 20);
  finished = 0;
  EXPECT_THROW(pool.parallel_for(3, 1, 3,
                                 [&](std::int64_t begin, std::int64_t) {
                                   if (begin > 0) {
                                     std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                     ++finished;
                                     throw std::runtime_error("part failed");
                                   }
                                   ++finished;
                                 }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 3);
  // The caller's own error wins over the pool's.
  try {
    pool.parallel_for(2, 1, 2, [](std::int64_t begin, std::int64_t) {
      if (begin == 0) throw std::out_of_range("caller");
      throw std::runtime_error("pool");
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::out_of_range&) {
  }
  // And the pool still works afterwards.
  Record r;
  r.run(pool, 30, 1, 3);
  EXPECT_EQ(r.ranges.size(), 3u);
}

TEST(ThreadPool, ServesSeveralCallersAtOnceWhileGrowing) {
  // Four "devices" each run many small ops and tasks at the same time; the pool grows
  // from one thread to three while they do.
  ThreadPool pool(1);
  constexpr int kCallers = 4, kCalls = 200, kN = 97;
  std::vector<std::vector<int>> hits(kCallers, std::vector<int>(kN, 0));
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&pool, &hits, c] {
      auto& mine = hits[static_cast<std::size_t>(c)];
      for (int call = 0; call < kCalls; ++call) {
        pool.parallel_for(kN, 1, 3, [&mine](std::int64_t begin, std::int64_t end) {
          for (std::int64_t i = begin; i < end; ++i) ++mine[static_cast<std::size_t>(i)];
        });
        pool.run(2, [&mine](std::size_t i) { ++mine[i]; });
      }
    });
  }
  pool.grow(3);
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(pool.size(), 3);
  std::vector<int> expected(kN, kCalls);
  expected[0] = expected[1] = 2 * kCalls;
  for (int c = 0; c < kCallers; ++c) EXPECT_EQ(hits[static_cast<std::size_t>(c)], expected);
}

TEST(ThreadPool, ZeroThreadsIsAUsageError) {
  EXPECT_THROW(ThreadPool(0), UsageError);
  ThreadPool pool(2);
  pool.grow(1);  // never shrinks
  EXPECT_EQ(pool.size(), 2);
}

}  // namespace
}  // namespace towers::base

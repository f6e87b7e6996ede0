// SPDX-License-Identifier: MIT
// parallel_for (kernels/host/parallel.hpp): the parts cover the range exactly once, use
// the threads they may and no more, respect the minimum part, run nested calls inline,
// report errors after every part has ended, and serve several callers at once (the
// simulated devices of the later chapters), which ThreadSanitizer checks in CI.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/host/parallel.hpp"
#include "op_threads.hpp"

namespace towers::host {
namespace {

using testing::OpThreads;

// The [begin, end) ranges parallel_for handed out, and the threads that ran them.
struct Record {
  std::mutex mutex;
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  std::set<std::thread::id> threads;

  void run(std::int64_t n, std::int64_t min_part) {
    parallel_for(n, min_part, [this](std::int64_t begin, std::int64_t end) {
      std::lock_guard lock(mutex);
      ranges.emplace_back(begin, end);
      threads.insert(std::this_thread::get_id());
    });
    std::sort(ranges.begin(), ranges.end());
  }
};

TEST(ParallelFor, PartsCoverTheRangeOnceInContiguousPieces) {
  for (int threads : {1, 2, 3, 7}) {
    OpThreads setting(threads);
    for (std::int64_t n : {1, 2, 5, 64, 1000, 1001}) {
      Record r;
      r.run(n, 1);
      ASSERT_FALSE(r.ranges.empty());
      EXPECT_EQ(r.ranges.front().first, 0) << "threads=" << threads << " n=" << n;
      EXPECT_EQ(r.ranges.back().second, n) << "threads=" << threads << " n=" << n;
      for (std::size_t i = 1; i < r.ranges.size(); ++i) {
        EXPECT_EQ(r.ranges[i].first, r.ranges[i - 1].second) << "gap or overlap, n=" << n;
      }
      // As many parts as threads, unless there are fewer elements than threads.
      EXPECT_EQ(r.ranges.size(), static_cast<std::size_t>(std::min<std::int64_t>(threads, n)));
    }
  }
}

TEST(ParallelFor, NothingToDoCallsNothing) {
  OpThreads setting(2);
  int calls = 0;
  parallel_for(0, 1, [&calls](std::int64_t, std::int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ParallelFor, PartsRunOnHelpersAndTheCallerRunsOne) {
  OpThreads setting(3);
  Record r;
  r.run(3000, 1);
  // The caller runs the first part; the other two go to the helpers, and one helper may
  // take both if it is quicker than the other to wake.
  EXPECT_EQ(r.threads.count(std::this_thread::get_id()), 1u);
  EXPECT_GE(r.threads.size(), 2u);
  EXPECT_LE(r.threads.size(), 3u);
}

TEST(ParallelFor, OneThreadRunsEverythingOnTheCaller) {
  OpThreads setting(1);
  Record r;
  r.run(3000, 1);
  ASSERT_EQ(r.ranges.size(), 1u);
  EXPECT_EQ(r.threads, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(ParallelFor, MinimumPartLimitsTheNumberOfParts) {
  OpThreads setting(4);
  Record r;
  r.run(1000, 400);  // room for two parts of >= 400, not four
  ASSERT_EQ(r.ranges.size(), 2u);
  for (const auto& [begin, end] : r.ranges) EXPECT_GE(end - begin, 400);
  Record small;
  small.run(300, 400);  // smaller than one part: runs whole, on the caller
  EXPECT_EQ(small.ranges.size(), 1u);
}

TEST(ParallelFor, NestedCallsRunInlineOnThePartsThread) {
  OpThreads setting(2);
  std::atomic<int> inner_parts{0};
  std::atomic<int> inner_on_other_thread{0};
  parallel_for(2, 1, [&](std::int64_t, std::int64_t) {
    const auto outer = std::this_thread::get_id();
    parallel_for(1000, 1, [&](std::int64_t, std::int64_t) {
      ++inner_parts;
      if (std::this_thread::get_id() != outer) ++inner_on_other_thread;
    });
  });
  EXPECT_EQ(inner_parts.load(), 2);  // one per outer part: the inner calls did not split
  EXPECT_EQ(inner_on_other_thread.load(), 0);
}

TEST(ParallelFor, AnErrorInAPartIsRethrownAfterEveryPartEnded) {
  OpThreads setting(3);
  std::atomic<int> finished{0};
  EXPECT_THROW(parallel_for(3, 1,
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
  // And the helpers still work afterwards.
  Record r;
  r.run(30, 1);
  EXPECT_EQ(r.ranges.size(), 3u);
}

TEST(ParallelFor, ServesSeveralCallersAtOnce) {
  // Four "devices" each run many small ops at the same time through two helpers.
  OpThreads setting(3);
  constexpr int kCallers = 4, kCalls = 200, kN = 97;
  std::vector<std::vector<int>> hits(kCallers, std::vector<int>(kN, 0));
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&hits, c] {
      for (int call = 0; call < kCalls; ++call) {
        parallel_for(kN, 1, [&hits, c](std::int64_t begin, std::int64_t end) {
          for (std::int64_t i = begin; i < end; ++i) ++hits[c][static_cast<std::size_t>(i)];
        });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) {
    EXPECT_EQ(hits[c], std::vector<int>(kN, kCalls)) << "caller " << c;
  }
}

TEST(ParallelFor, RefusesZeroThreads) {
  EXPECT_THROW(set_op_threads(0), std::invalid_argument);
  EXPECT_EQ(op_threads(), 1);
}

}  // namespace
}  // namespace towers::host

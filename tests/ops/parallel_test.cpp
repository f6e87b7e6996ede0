// SPDX-License-Identifier: MIT
// The op-thread setting (kernels/host/parallel.hpp): parallel_for uses as many threads as
// set_op_threads allows, the caller included, and the setting's process-wide helpers
// serve several callers at once (the simulated devices of the later chapters), which
// ThreadSanitizer checks in CI. How the parts are cut, nested calls, errors: the pool's
// own tests (tests/base/thread_pool_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "base/usage_error.hpp"
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

TEST(ParallelFor, OneThreadRunsEverythingOnTheCaller) {
  OpThreads setting(1);
  Record r;
  r.run(3000, 1);
  ASSERT_EQ(r.ranges.size(), 1u);
  EXPECT_EQ(r.threads, std::set<std::thread::id>{std::this_thread::get_id()});
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
  EXPECT_THROW(set_op_threads(0), UsageError);
  EXPECT_EQ(op_threads(), 1);
}

}  // namespace
}  // namespace towers::host

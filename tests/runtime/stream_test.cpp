// SPDX-License-Identifier: MIT
// Streams: FIFO order, asynchronous launch, error reporting, clean destruction.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "base/timing.hpp"
#include "runtime/busy.hpp"

namespace towers {
namespace {

TOWERS_BOTH_BACKENDS_SUITE(Streams);

TEST_P(Streams, CopiesRunInEnqueueOrder) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  Device& device = rt->device(0);
  auto stream = device.create_stream();
  constexpr int kN = 64;
  Buffer pinned = device.allocate_pinned(kN * sizeof(int));
  Buffer slot = device.allocate(sizeof(int));
  Buffer history = device.allocate(kN * sizeof(int));
  std::vector<int> values(kN);
  for (int i = 0; i < kN; ++i) pinned.as<int>()[i] = i;
  // Each value passes through one slot; only FIFO order leaves history == 0..N-1.
  for (int i = 0; i < kN; ++i) {
    stream->copy(slot.data(), pinned.as<int>() + i, sizeof(int));
    stream->copy(history.as<int>() + i, slot.data(), sizeof(int));
  }
  Buffer out = device.allocate_pinned(kN * sizeof(int));
  stream->copy(out.data(), history.data(), kN * sizeof(int));
  stream->synchronize();
  for (int i = 0; i < kN; ++i) EXPECT_EQ(out.as<int>()[i], i) << "at " << i;
}

TEST_P(Streams, LaunchReturnsBeforeTheWorkFinishes) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  auto stream = rt->device(0).create_stream();
  auto started = std::chrono::steady_clock::now();
  busy_kernel(*stream, 300);
  double enqueue_ms = base::ms_since(started);
  auto done = rt->device(0).create_event();
  stream->record(*done);
  EXPECT_FALSE(done->query()) << "the 300 ms kernel had already finished at enqueue";
  stream->synchronize();
  double total_ms = base::ms_since(started);
  EXPECT_TRUE(done->query());
  EXPECT_LT(enqueue_ms, 100) << "enqueueing waited for the kernel";
  EXPECT_GE(total_ms, 290) << "synchronize returned before the kernel ran";
}

TEST(HostStream, HostWorkRunsInFifoOrderOnTheWorker) {
  auto rt = Runtime::create({BackendChoice::kHost, 1});
  auto stream = rt->device(0).create_stream();
  std::vector<int> order;  // written only by the stream's worker
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> ran_on_caller{false};
  for (int i = 0; i < 100; ++i) {
    stream->launch("push", [&order, &ran_on_caller, caller, i] {
      if (std::this_thread::get_id() == caller) ran_on_caller = true;
      order.push_back(i);
    }, nullptr);
  }
  stream->synchronize();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  EXPECT_FALSE(ran_on_caller) << "host work ran on the enqueuing thread";
}

TEST(HostStream, ErrorIsReportedAtTheNextSynchronizeAndLaterWorkSkipped) {
  auto rt = Runtime::create({BackendChoice::kHost, 1});
  auto stream = rt->device(0).create_stream();
  std::atomic<int> ran_after{0};
  stream->launch("boom", [] { throw std::runtime_error("kernel failed: bad shape"); }, nullptr);
  stream->launch("after", [&] { ++ran_after; }, nullptr);
  try {
    stream->synchronize();
    FAIL() << "synchronize did not report the stream's error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "kernel failed: bad shape");
  }
  EXPECT_EQ(ran_after.load(), 0) << "work after a failed op ran";
  // Reported once; the stream is usable again.
  stream->launch("again", [&] { ++ran_after; }, nullptr);
  EXPECT_NO_THROW(stream->synchronize());
  EXPECT_EQ(ran_after.load(), 1);
}

TEST(HostStream, DeviceSynchronizeReportsAnErrorFromAnyStream) {
  auto rt = Runtime::create({BackendChoice::kHost, 1});
  auto healthy = rt->device(0).create_stream();
  auto failing = rt->device(0).create_stream();
  busy_kernel(*healthy, 20);
  failing->launch("boom", [] { throw std::runtime_error("lost?"); }, nullptr);
  EXPECT_THROW(rt->device(0).synchronize(), std::runtime_error);
}

TEST(HostStream, DestructionDrainsQueuedWork) {
  auto rt = Runtime::create({BackendChoice::kHost, 1});
  std::atomic<int> ran{0};
  {
    auto stream = rt->device(0).create_stream();
    for (int i = 0; i < 10; ++i) {
      stream->launch("slow", [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        ++ran;
      }, nullptr);
    }
  }  // no synchronize: the destructor must still run (and join) everything
  EXPECT_EQ(ran.load(), 10);
}

}  // namespace
}  // namespace towers

// SPDX-License-Identifier: MIT
// Events: cross-stream ordering without blocking the host, timing, error propagation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "backends.hpp"
#include "runtime/busy.hpp"

namespace towers {
namespace {

TOWERS_BOTH_BACKENDS_SUITE(Events);

TEST_P(Events, WaitOrdersWorkAcrossStreamsAndDevices) {
  TOWERS_RUNTIME_OR_SKIP(rt, 2);
  auto producer = rt->device(0).create_stream();
  auto consumer = rt->device(1).create_stream();
  auto ready = rt->device(0).create_event();
  Buffer host_in = rt->device(0).allocate_pinned(sizeof(int));
  Buffer host_out = rt->device(1).allocate_pinned(sizeof(int));
  Buffer on0 = rt->device(0).allocate(sizeof(int));
  Buffer on1 = rt->device(1).allocate(sizeof(int));
  *host_in.as<int>() = 42;
  *host_out.as<int>() = 0;

  busy_kernel(*producer, 100);  // the value lands on device 0 only after 100 ms
  producer->copy(on0.data(), host_in.data(), sizeof(int));
  producer->record(*ready);
  consumer->wait(*ready);  // without this, the peer copy would read too early
  consumer->copy(on1.data(), on0.data(), sizeof(int), "peer copy");
  consumer->copy(host_out.data(), on1.data(), sizeof(int));
  consumer->synchronize();
  EXPECT_EQ(*host_out.as<int>(), 42);
}

TEST_P(Events, ElapsedTimeMeasuresDeviceWork) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  auto stream = rt->device(0).create_stream();
  auto start = rt->device(0).create_event();
  auto end = rt->device(0).create_event();
  stream->record(*start);
  busy_kernel(*stream, 50);
  stream->record(*end);
  end->synchronize();
  EXPECT_TRUE(start->query());
  EXPECT_GE(end->elapsed_ms_since(*start), 45.0f);
}

TEST_P(Events, WaitOnlyEventsOrderWorkLikeTimedOnes) {
  // create_wait_event(): cudaEventDisableTiming on a GPU, for events only waited on.
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  auto producer = rt->device(0).create_stream();
  auto consumer = rt->device(0).create_stream();
  auto ready = rt->device(0).create_wait_event();
  Buffer in = rt->device(0).allocate_pinned(sizeof(int));
  Buffer out = rt->device(0).allocate_pinned(sizeof(int));
  Buffer on_device = rt->device(0).allocate(sizeof(int));
  *in.as<int>() = 7;
  *out.as<int>() = 0;
  busy_kernel(*producer, 50);
  producer->copy(on_device.data(), in.data(), sizeof(int));
  producer->record(*ready);
  consumer->wait(*ready);
  consumer->copy(out.data(), on_device.data(), sizeof(int));
  consumer->synchronize();
  EXPECT_EQ(*out.as<int>(), 7);
  if (GetParam() == Backend::kCuda) {
    EXPECT_THROW((void)ready->elapsed_ms_since(*ready), std::logic_error) << "it has no timing";
  }
}

TEST_P(Events, WaitingOnAnEventNeverRecordedDoesNotBlock) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  auto stream = rt->device(0).create_stream();
  auto never = rt->device(0).create_event();
  stream->wait(*never);
  EXPECT_TRUE(never->query());
  stream->synchronize();
}

TEST(HostEvents, WaitBlocksOnlyTheWaitingStream) {
  auto rt = Runtime::create({BackendChoice::kHost, 1});
  auto slow = rt->device(0).create_stream();
  auto waiter = rt->device(0).create_stream();
  auto other = rt->device(0).create_stream();
  auto done = rt->device(0).create_event();
  busy_kernel(*slow, 200);
  slow->record(*done);
  waiter->wait(*done);
  std::atomic<bool> other_ran{false};
  other->launch("independent", [&] { other_ran = true; }, nullptr);
  other->synchronize();  // must not wait 200 ms for `slow`
  EXPECT_TRUE(other_ran);
  EXPECT_FALSE(done->query()) << "the slow stream should still be running";
  waiter->synchronize();
  EXPECT_TRUE(done->query());
}

TEST(HostEvents, AnErrorTravelsToStreamsThatWaitOnIt) {
  auto rt = Runtime::create({BackendChoice::kHost, 2});
  auto failing = rt->device(0).create_stream();
  auto waiter = rt->device(1).create_stream();
  auto event = rt->device(0).create_event();
  failing->launch("boom", [] { throw std::runtime_error("tower 0 failed"); }, nullptr);
  failing->record(*event);
  waiter->wait(*event);
  std::atomic<bool> ran{false};
  waiter->launch("after", [&] { ran = true; }, nullptr);
  EXPECT_THROW(waiter->synchronize(), std::runtime_error);
  EXPECT_FALSE(ran) << "work that depended on a failed stream ran";
  EXPECT_THROW(event->synchronize(), std::runtime_error);
  EXPECT_THROW(failing->synchronize(), std::runtime_error);
}

}  // namespace
}  // namespace towers

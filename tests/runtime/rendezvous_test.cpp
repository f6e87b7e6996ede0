// SPDX-License-Identifier: MIT
// The rendezvous probe: meets when streams run concurrently, times out when serialized.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "backends.hpp"
#include "runtime/rendezvous.hpp"

namespace towers {
namespace {

using namespace std::chrono_literals;
TOWERS_BOTH_BACKENDS_SUITE(RendezvousProbe);

std::vector<std::unique_ptr<Stream>> one_stream_per_device(Runtime& rt) {
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < rt.device_count(); ++i) streams.push_back(rt.device(i).create_stream());
  return streams;
}

TEST_P(RendezvousProbe, MeetsWhenAllStreamsRunConcurrently) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  // Four streams on one device: concurrency within a device (towers per device) and,
  // on host, more participants than CPU cores.
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < 4; ++i) streams.push_back(rt->device(0).create_stream());
  Rendezvous rendezvous(*rt, 4, 5000ms);
  for (auto& s : streams) rendezvous.enqueue(*s);
  for (auto& s : streams) s->synchronize();
  EXPECT_TRUE(rendezvous.all_met());
  EXPECT_EQ(rendezvous.max_present(), 4);
}

TEST_P(RendezvousProbe, MeetsAcrossDevices) {
  TOWERS_RUNTIME_OR_SKIP(rt, 2);
  auto streams = one_stream_per_device(*rt);
  Rendezvous rendezvous(*rt, rt->device_count(), 5000ms);
  for (auto& s : streams) rendezvous.enqueue(*s);
  rt->synchronize();
  EXPECT_TRUE(rendezvous.all_met());
}

TEST_P(RendezvousProbe, TimesOutWhenTheHostSerializesTheStreams) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < 3; ++i) streams.push_back(rt->device(0).create_stream());
  Rendezvous rendezvous(*rt, 3, 100ms);
  auto start = std::chrono::steady_clock::now();
  for (auto& s : streams) {
    rendezvous.enqueue(*s);
    s->synchronize();  // chapter 2's mistake: wait for each before the next
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(rendezvous.all_met());
  EXPECT_EQ(rendezvous.max_present(), 1);
  EXPECT_LT(elapsed, 5s) << "a serialized rendezvous must time out, not hang";
}

// A graph replays its probes at every launch (chapter 7), so each round must start clean:
// a round that met must not make the next one "meet" at once. Round 1 runs concurrently
// and meets; round 2 puts both probes on one stream, which can never meet.
TEST_P(RendezvousProbe, EachRoundAfterAResetMustMeetAnew) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  auto a = rt->device(0).create_stream(), b = rt->device(0).create_stream();
  Rendezvous rendezvous(*rt, 2, 100ms);
  rendezvous.enqueue(*a);
  rendezvous.enqueue(*b);
  rt->synchronize();
  ASSERT_TRUE(rendezvous.all_met()) << "round 1: two streams at once";
  rendezvous.enqueue_reset(*a);
  rendezvous.enqueue(*a);
  rendezvous.enqueue(*a);  // behind the first probe: it can only time out
  rt->synchronize();
  EXPECT_FALSE(rendezvous.all_met()) << "round 2 was serial, yet the rounds report met";
  EXPECT_EQ(rendezvous.max_present(), 1);
}

// Rounds that all meet report met; a reset before any probe ran changes nothing.
TEST_P(RendezvousProbe, RoundsThatAllMeetReportMet) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  auto a = rt->device(0).create_stream(), b = rt->device(0).create_stream();
  Rendezvous rendezvous(*rt, 2, 5000ms);
  for (int round = 0; round < 3; ++round) {
    rendezvous.enqueue_reset(*a);
    rt->synchronize();
    rendezvous.enqueue(*a);
    rendezvous.enqueue(*b);
    rt->synchronize();
  }
  EXPECT_TRUE(rendezvous.all_met());
  EXPECT_EQ(rendezvous.max_present(), 2);
}

TEST(Rendezvous, RefusesMoreParticipantsThanDeclared) {
  auto rt = Runtime::create({BackendChoice::kHost, 1});
  auto stream = rt->device(0).create_stream();
  Rendezvous rendezvous(*rt, 1, 10ms);
  rendezvous.enqueue(*stream);
  EXPECT_THROW(rendezvous.enqueue(*stream), std::logic_error);
  stream->synchronize();
  EXPECT_TRUE(rendezvous.all_met());
}

}  // namespace
}  // namespace towers

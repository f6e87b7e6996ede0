// SPDX-License-Identifier: MIT
// What every all-reduce on simulated devices must do, written once and run for each: the
// ring (chapter 4) and device0 (chapter 3's averaging, chapter 4's baseline). The exact
// mean on every tower for any count; towers sharing a device; reuse of its buffers and
// events; ordering after the towers' earlier work and before their later work; refusing
// calls that do not match its set-up. What only one of them does (the ring's chunks and
// steps, device0's order of sums and its ops on device 0) is in ring_test.cpp and
// device0_test.cpp.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "parallel/allreduce.hpp"
#include "runtime/busy.hpp"
#include "tower_buffers.hpp"

namespace towers {
namespace {

using testing::average_once;
using testing::expected_mean;
using testing::first_mismatch;
using testing::host_runtime;
using testing::round_robin;
using testing::TowerBuffers;

/// One all-reduce under test: its name (as AllReduce::name() says it), how to make it
/// for towers on the given devices and counts up to max_count, and how many towers the
/// tests that vary the number of towers give it.
struct AllReduceKind {
  std::string name;
  std::function<std::unique_ptr<AllReduce>(Runtime&, std::span<const int>, std::size_t)> make;
  int most_towers;
};

const AllReduceKind kRing{"ring",
                          [](Runtime& rt, std::span<const int> devices, std::size_t max_count) {
                            return make_ring_allreduce(rt, devices, max_count);
                          },
                          8};
const AllReduceKind kDevice0{"device0", &make_device0_allreduce, 5};

// So that a failure, and --gtest_list_tests, name the kind rather than its bytes.
void PrintTo(const AllReduceKind& kind, std::ostream* out) { *out << kind.name; }

// The kind alone: what every all-reduce must do whatever its number of towers.
class AllReduceContract : public ::testing::TestWithParam<AllReduceKind> {
 protected:
  std::unique_ptr<AllReduce> make(Runtime& rt, std::span<const int> devices,
                                  std::size_t max_count) const {
    return GetParam().make(rt, devices, max_count);
  }
};
INSTANTIATE_TEST_SUITE_P(AllReduces, AllReduceContract, ::testing::Values(kRing, kDevice0),
                         [](const auto& info) { return info.param.name; });

// The kind and a number n of towers, 1 to its most_towers, tower t on simulated device t.
class AllReduceTowers : public ::testing::TestWithParam<std::tuple<AllReduceKind, int>> {
 protected:
  const int n = std::get<1>(GetParam());
  const std::unique_ptr<Runtime> rt = host_runtime(n);

  std::unique_ptr<AllReduce> make(std::size_t max_count) const {
    return std::get<0>(GetParam()).make(*rt, round_robin(n, n), max_count);
  }
};
std::string kind_and_towers(const ::testing::TestParamInfo<AllReduceTowers::ParamType>& info) {
  return std::get<0>(info.param).name + "_" + std::to_string(std::get<1>(info.param));
}
INSTANTIATE_TEST_SUITE_P(Ring, AllReduceTowers,
                         ::testing::Combine(::testing::Values(kRing),
                                            ::testing::Range(1, kRing.most_towers + 1)),
                         kind_and_towers);
INSTANTIATE_TEST_SUITE_P(Device0, AllReduceTowers,
                         ::testing::Combine(::testing::Values(kDevice0),
                                            ::testing::Range(1, kDevice0.most_towers + 1)),
                         kind_and_towers);

TEST_P(AllReduceTowers, EqualsTheExactMeanForCountsThatDoNotDivide) {
  const std::size_t max_count = 3 * n + 2;
  auto allreduce = make(max_count);
  // count < n leaves ring chunks empty; 0 and 1 are the edge cases; 3n+2 does not divide.
  for (std::size_t count : std::set<std::size_t>{0, 1, static_cast<std::size_t>(n - 1),
                                                 static_cast<std::size_t>(n + 1), max_count}) {
    TowerBuffers towers(*rt, round_robin(n, n), count);
    EXPECT_EQ(average_once(*allreduce, towers), "") << "count " << count;
  }
}

TEST_P(AllReduceTowers, AveragesAgainThroughTheSameBuffersAndEvents) {
  const std::size_t count = 4 * n + 1;
  auto allreduce = make(count);
  TowerBuffers towers(*rt, round_robin(n, n), count);
  for (int round : {0, 1}) {
    towers.upload(round);
    allreduce->average(towers.buffers(), count, towers.streams());
    EXPECT_EQ(first_mismatch(towers.download(), expected_mean(n, count, round)), "")
        << "round " << round;
  }
}

TEST_P(AllReduceTowers, AveragingTwiceWithoutWaitingIsStillExact) {
  const std::size_t count = 4 * n + 1;
  auto allreduce = make(count);
  TowerBuffers towers(*rt, round_robin(n, n), count);
  towers.upload(0);
  allreduce->average(towers.buffers(), count, towers.streams());
  allreduce->average(towers.buffers(), count, towers.streams());  // the mean of equal buffers
  // Every tower holds the same m after the first average, so the second sum is m added to
  // a running sum n-1 times, in that order whichever ring chunk: the oracle does the same.
  const std::vector<float> once = expected_mean(n, count, 0);
  std::vector<float> twice(count);
  for (std::size_t e = 0; e < count; ++e) {
    float sum = once[e];
    for (int t = 1; t < n; ++t) sum += once[e];
    twice[e] = sum * (1.0f / static_cast<float>(n));
  }
  EXPECT_EQ(first_mismatch(towers.download(), twice), "");
  // And a new round of inputs through the same receive buffers and events.
  towers.upload(1);
  allreduce->average(towers.buffers(), count, towers.streams());
  EXPECT_EQ(first_mismatch(towers.download(), expected_mean(n, count, 1)), "");
}

TEST_P(AllReduceContract, TowersSharingDevicesAverageToo) {
  auto rt = host_runtime(2);
  for (const auto& placement : {std::vector<int>{0, 0, 0}, std::vector<int>{0, 0, 0, 0},
                                round_robin(4, 2), round_robin(6, 2)}) {
    const std::size_t count = 1000 + 3;
    auto allreduce = make(*rt, placement, count);
    TowerBuffers towers(*rt, placement, count);
    EXPECT_EQ(average_once(*allreduce, towers), "") << placement.size() << " towers";
  }
}

TEST_P(AllReduceContract, WaitsForEarlierWorkAndIsWaitedForByLaterWork) {
  // Tower 2's upload lands late (an all-reduce that did not wait would sum stale zeros);
  // then every tower keeps its result and zeroes its buffer at once (as the next backward
  // pass overwrites gradients): that must come after the all-reduce is done with it.
  struct Case {
    int towers;
    std::size_t count;
    double slow_ms;
  };
  for (const Case& c : {Case{3, 1 << 14, 30}, Case{4, 4096 + 5, 50}}) {
    auto rt = host_runtime(c.towers);
    auto allreduce = make(*rt, round_robin(c.towers, c.towers), c.count);
    TowerBuffers towers(*rt, round_robin(c.towers, c.towers), c.count);
    TowerBuffers results(*rt, round_robin(c.towers, c.towers), c.count);
    towers.upload_late(/*slow=*/2, c.slow_ms);
    allreduce->average(towers.buffers(), c.count, towers.streams());
    towers.keep_then_overwrite(results);
    towers.synchronize();
    EXPECT_EQ(first_mismatch(results.download(), expected_mean(c.towers, c.count)), "")
        << c.towers << " towers";
  }
}

TEST_P(AllReduceContract, LaterWorkOnAStreamMayOverwriteItsBuffer) {
  // After average(), each tower keeps its result and zeroes its buffer at once. Whoever
  // reads that buffer (the ring's right neighbour, device 0's peer copy) must have
  // finished by then, or it would read zeros; tower 1 is made the slow one, so the others
  // run ahead.
  auto rt = host_runtime(4);
  const std::size_t count = 1 << 16;
  auto allreduce = make(*rt, round_robin(4, 4), count);
  TowerBuffers towers(*rt, round_robin(4, 4), count);
  TowerBuffers results(*rt, round_robin(4, 4), count);
  towers.upload();
  busy_kernel(towers.stream(1), 20);
  allreduce->average(towers.buffers(), count, towers.streams());
  towers.keep_then_overwrite(results);
  towers.synchronize();
  EXPECT_EQ(first_mismatch(results.download(), expected_mean(4, count)), "");
}

TEST_P(AllReduceContract, RejectsCallsThatDoNotMatchItsSetup) {
  auto rt = host_runtime(2);
  EXPECT_THROW(make(*rt, std::vector<int>{}, 16), std::invalid_argument) << "no towers";
  EXPECT_THROW(make(*rt, std::vector<int>{0, 2}, 16), std::invalid_argument) << "no device 2";
  auto allreduce = make(*rt, std::vector<int>{0, 1}, 16);
  EXPECT_EQ(allreduce->name(), GetParam().name);
  TowerBuffers two(*rt, {0, 1}, 32);
  EXPECT_THROW(allreduce->average(two.buffers(), 17, two.streams()), std::invalid_argument)
      << "more than max_count";
  TowerBuffers swapped(*rt, {1, 0}, 16);
  EXPECT_THROW(allreduce->average(swapped.buffers(), 16, swapped.streams()),
               std::invalid_argument)
      << "towers on other devices than at set-up";
  TowerBuffers three(*rt, {0, 1, 1}, 16);
  EXPECT_THROW(allreduce->average(three.buffers(), 16, three.streams()), std::invalid_argument)
      << "more towers than at set-up";
}

}  // namespace
}  // namespace towers

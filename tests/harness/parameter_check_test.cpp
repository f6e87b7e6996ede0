// SPDX-License-Identifier: MIT
// harness/parameter_check: towers with equal parameters pass, one differing bit stops the
// run naming the towers, --inject-divergence makes that bit, and the message groups the
// copies by checksum with copy 0's group first.
#include "harness/parameter_check.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/usage_error.hpp"
#include "runtime/runtime.hpp"

namespace towers {
namespace {

constexpr std::size_t kCount = 16;

// Two host devices, a tower on each (only what the check reads: device, stream, index),
// each holding kCount equal parameters on its device.
struct TwoTowers {
  std::unique_ptr<Runtime> rt = Runtime::create({BackendChoice::kHost, 2});
  std::vector<std::unique_ptr<Tower>> towers;
  std::vector<Buffer> params;
  std::vector<float*> ptrs;
  explicit TwoTowers(int count = 2) {
    const std::vector<float> start(kCount, 0.25f);
    for (int i = 0; i < count; ++i) {
      auto tower = std::make_unique<Tower>();
      tower->index = i;
      tower->device = &rt->device(i);
      tower->stream = tower->device->create_stream();
      params.push_back(tower->device->allocate(kCount * sizeof(float)));
      ptrs.push_back(params.back().as<float>());
      tower->stream->copy(ptrs.back(), start.data(), kCount * sizeof(float));
      tower->stream->synchronize();
      towers.push_back(std::move(tower));
    }
  }
};

TEST(ParameterCheck, EqualCopiesPassAndOneFlippedBitStops) {
  TwoTowers two;
  ParameterCheck check(two.towers, kCount, CheckFlags{/*check_every=*/1, -1}, /*steps=*/10);
  check.after_step(0, two.ptrs);
  EXPECT_EQ(check.checks(), 1);
  float changed = std::nextafter(0.25f, 1.0f);
  two.towers[1]->stream->copy(two.ptrs[1] + 5, &changed, sizeof(float));
  two.towers[1]->stream->synchronize();
  try {
    check.after_step(1, two.ptrs);
    ADD_FAILURE() << "towers with different parameters passed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("differ after step 1"), std::string::npos) << e.what();
  }
}

TEST(ParameterCheck, ChecksEveryKStepsAndTheLast) {
  TwoTowers two;
  ParameterCheck check(two.towers, kCount, CheckFlags{/*check_every=*/3, -1}, /*steps=*/5);
  for (int step = 0; step < 5; ++step) check.after_step(step, two.ptrs);
  EXPECT_EQ(check.checks(), 2);  // after step 2 (the 3rd) and step 4 (the last)
}

TEST(ParameterCheck, InjectedDivergenceIsCaught) {
  TwoTowers two;
  ParameterCheck check(two.towers, kCount, CheckFlags{/*check_every=*/1, /*inject=*/2}, 10);
  ::testing::internal::CaptureStdout();
  check.after_step(0, two.ptrs);
  check.after_step(1, two.ptrs);
  EXPECT_THROW(check.after_step(2, two.ptrs), std::runtime_error);
  ::testing::internal::GetCapturedStdout();
  TwoTowers one(1);
  EXPECT_THROW(ParameterCheck(one.towers, kCount, CheckFlags{1, 0}, 10), UsageError);
}

TEST(DivergenceMessage, GroupsCopiesByChecksumCopyZerosFirst) {
  const std::array<std::uint64_t, 4> same = {7, 7, 7, 7};
  EXPECT_EQ(divergence_message(same, 3, "tower"), "");
  const std::array<std::uint64_t, 4> sums = {9, 1, 9, 1};
  const std::string message = divergence_message(sums, 3, "rank");
  EXPECT_NE(message.find("ranks 0, 2 have checksum 0000000000000009; ranks 1, 3 have checksum "
                         "0000000000000001;"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace towers

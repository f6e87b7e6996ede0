// SPDX-License-Identifier: MIT
// Chapter 2's claims: a tower loop that synchronizes after each tower is serial.
#include <gtest/gtest.h>

#include "program.hpp"

namespace towers {
namespace {

using testing::run;

// Small batches keep the test quick; the schedule, not the batch, is what is tested.
const std::string kSmall = "--backend host --batch-size 16 --log-every 1 ";

TEST(SerialTowers, AtMostOneTowerIsBusyInEveryStep) {
  auto r = run("02_serial_towers", kSmall + "--steps 3 --devices 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("towers"), "2");
  EXPECT_EQ(r.last("max_concurrent_towers"), "1") << r.output;
  EXPECT_EQ(r.number("overlap"), 0.0) << r.output;
  EXPECT_EQ(r.last("towers_meet"), "host");
}

TEST(SerialTowers, RendezvousAcrossTowersTimesOut) {
  auto r = run("02_serial_towers", kSmall + "--devices 2 --steps 1 --probe");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("rendezvous"), "timeout") << r.output;
  EXPECT_EQ(r.last("probe_concurrent_towers"), "1") << r.output;
}

TEST(SerialTowers, StaysSerialWithSeveralTowersOnOneDevice) {
  auto r = run("02_serial_towers", kSmall + "--steps 3 --devices 1 --towers-per-device 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("towers"), "3");
  EXPECT_EQ(r.last("max_concurrent_towers"), "1") << r.output;
}

TEST(SerialTowers, PrintsTheTutorialsLogLineAndATimeline) {
  auto r = run("02_serial_towers", kSmall + "--steps 3 --devices 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(": step 2, loss = "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("examples/sec; "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dev1 s0   |"), std::string::npos) << r.output;
}

TEST(SerialTowers, BadTowerCountsAreUsageErrors) {
  auto zero = run("02_serial_towers", kSmall + "--steps 1 --towers 0");
  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  auto uneven = run("02_serial_towers", kSmall + "--steps 1 --devices 2 --towers 3");
  EXPECT_EQ(uneven.exit_code, 2) << uneven.output;
  EXPECT_NE(uneven.output.find("divide evenly"), std::string::npos) << uneven.output;
  auto too_big = run("02_serial_towers", "--backend host --steps 1 --devices 1 --towers 1 --batch-size 60000");
  EXPECT_EQ(too_big.exit_code, 2) << too_big.output;
}

}  // namespace
}  // namespace towers

// SPDX-License-Identifier: MIT
// Chapter 2's claims: a tower loop that synchronizes after each tower is serial; and it
// keeps chapter 1's checkpoints (exact resume) and --eval, through the harness.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "../data/temp_dir.hpp"
#include "data/cifar10.hpp"
#include "exact_resume.hpp"
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

namespace fs = std::filesystem;
using testing::tiny_set;

TEST(SerialTowers, FiveStepsPlusResumeFiveEqualTenByteForByte) {
  data::testing::TempDir dir;
  testing::expect_exact_resume("02_serial_towers", dir.path());
}

TEST(SerialTowers, EvalPrintsPrecisionOfTheMovingAverages) {
  data::testing::TempDir dir;
  auto r = run("02_serial_towers", tiny_set(dir.path()) + "--steps 2 --eval");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // 20 test images in batches of 4 (a tower's batch): 5 batches, 20 predictions.
  EXPECT_NE(r.output.find("precision @ 1 = "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" of 20)"), std::string::npos) << r.output;
  const double precision = r.number("precision_at_1");
  EXPECT_GE(precision, 0.0);
  EXPECT_LE(precision, 1.0);
  EXPECT_EQ(r.last("towers"), "2");  // the existing keys stay
}

TEST(SerialTowers, BadCheckpointDirOrTestSetIsRefusedBeforeTraining) {
  data::testing::TempDir dir;
  const std::string flags = tiny_set(dir.path());
  const fs::path file = dir.path() / "a_file";
  std::ofstream(file) << "not a folder";
  auto refused = run("02_serial_towers", flags + "--steps 100000 --checkpoint-dir " + file.string());
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("--checkpoint-dir"), std::string::npos) << refused.output;
  EXPECT_EQ(refused.output.find(": step 0"), std::string::npos) << refused.output;
  auto alone = run("02_serial_towers", flags + "--steps 1 --resume");
  EXPECT_EQ(alone.exit_code, 2) << alone.output;
  EXPECT_NE(alone.output.find("--resume needs --checkpoint-dir"), std::string::npos) << alone.output;
  fs::resize_file(data::test_file(dir.path()), 100);  // truncated
  auto eval = run("02_serial_towers", flags + "--steps 100000 --eval");
  EXPECT_EQ(eval.exit_code, 2) << eval.output;
  EXPECT_NE(eval.output.find("test_batch.bin"), std::string::npos) << eval.output;
  EXPECT_EQ(eval.output.find(": step 0"), std::string::npos) << eval.output;
}

}  // namespace
}  // namespace towers

// SPDX-License-Identifier: MIT
// Chapter 3's claims: a loop that only enqueues runs towers concurrently, does the same
// math as chapter 2, and N towers of batch B equal one tower of batch N*B.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "../data/temp_dir.hpp"
#include "exact_resume.hpp"
#include "model/checkpoint.hpp"
#include "model/parameters.hpp"
#include "program.hpp"

namespace towers {
namespace {

using testing::run;

const std::string kSmall = "--backend host --batch-size 16 --log-every 1 ";

std::filesystem::path temp_file(const std::string& name) {
  return testing::temp_file("towers-ch3", name);
}
using testing::saved_params;

TEST(StreamTowers, TowersOverlapWithinAStep) {
  auto r = run("03_stream_towers", kSmall + "--steps 3 --devices 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("max_concurrent_towers"), "2") << r.output;
  EXPECT_GT(r.number("overlap"), 0.0) << r.output;
  EXPECT_EQ(r.last("towers_meet"), "device0");
  // On the host a span is a worker thread running the op: what ran is what the streams held.
  EXPECT_EQ(r.last("concurrency_from"), "host_threads") << r.output;
  EXPECT_EQ(r.last("stream_concurrent_towers"), "2") << r.output;
}

TEST(StreamTowers, RendezvousAcrossTowersMeets) {
  auto r = run("03_stream_towers", kSmall + "--devices 4 --steps 1 --probe");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("rendezvous"), "met") << r.output;
}

TEST(StreamTowers, SeveralTowersOnOneDeviceOverlapToo) {
  auto r = run("03_stream_towers", kSmall + "--steps 2 --devices 1 --towers-per-device 2 --probe");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("rendezvous"), "met") << r.output;
  EXPECT_EQ(r.last("probe_concurrent_towers"), "2") << r.output;
  EXPECT_EQ(r.last("max_concurrent_towers"), "2") << r.output;
}

TEST(StreamTowers, HostEnqueueTimeIsASmallFractionOfTheStep) {
  // The loop only enqueues: the host is done long before the devices are.
  auto r = run("03_stream_towers", "--backend host --steps 4 --batch-size 64 --devices 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double enqueue = r.number("host_enqueue_ms"), step = r.number("step_ms");
  EXPECT_GT(step, 0);
  EXPECT_GT(enqueue, 0) << "no \"enqueue\" span reached the analysis (trace/span_names.hpp)";
  EXPECT_LT(enqueue, 0.1 * step) << "enqueue " << enqueue << " ms of a " << step << " ms step";
}

TEST(StreamTowers, SameParametersAsSerialTowersBitForBit) {
  auto serial = temp_file("serial.ckpt"), stream = temp_file("stream.ckpt");
  auto a = run("02_serial_towers", kSmall + "--steps 3 --devices 2 --save-params " + serial.string());
  auto b = run("03_stream_towers", kSmall + "--steps 3 --devices 2 --save-params " + stream.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(saved_params(serial), saved_params(stream))
      << "same data, same sums in the same order: the schedule must not change the math";
}

// N towers of batch B against one tower of batch N*B, one step from the same start.
// Both average the same N*B per-example gradients; only the order of float additions
// differs (per-tower means, then their mean). Each gradient element is a sum of a few
// thousand terms of similar size, so the difference stays within ~1e-5 of the largest
// update; we allow 1e-4 of it.
class TowerEquivalence : public ::testing::TestWithParam<int> {};

TEST_P(TowerEquivalence, NTowersOfBatchBEqualOneTowerOfBatchNB) {
  const int n = GetParam(), b = 8;
  auto towers_file = temp_file("n" + std::to_string(n) + ".ckpt");
  auto single_file = temp_file("single" + std::to_string(n) + ".ckpt");
  auto start_file = temp_file("start.ckpt");
  auto start = run("03_stream_towers", "--backend host --devices 1 --steps 0 --batch-size 8 "
                   "--save-params " + start_file.string());
  auto many = run("03_stream_towers", "--backend host --steps 1 --devices " + std::to_string(n) +
                  " --batch-size " + std::to_string(b) + " --save-params " + towers_file.string());
  auto one = run("03_stream_towers", "--backend host --steps 1 --devices 1 --batch-size " +
                 std::to_string(n * b) + " --save-params " + single_file.string());
  ASSERT_EQ(start.exit_code, 0) << start.output;
  ASSERT_EQ(many.exit_code, 0) << many.output;
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(saved_params(towers_file).size(), model::kNumParameters);
  const auto [largest_update, largest_difference] =
      testing::one_step_apart(start_file, single_file, towers_file);
  std::printf("N=%d: largest update %.3g, largest difference %.3g\n", n, largest_update,
              largest_difference);
  EXPECT_GT(largest_update, 0.0);
  EXPECT_LE(largest_difference, 1e-4 * largest_update);
}

INSTANTIATE_TEST_SUITE_P(Towers, TowerEquivalence, ::testing::Values(1, 2, 4));

TEST(StreamTowers, BatchLargerThanTheModelSupportsIsRefusedWithItsBound) {
  // 65,536 used to be accepted, and conv2's im2col then overflowed int on a GPU.
  auto r = run("03_stream_towers", "--backend host --steps 1 --batch-size 65536");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("9320"), std::string::npos) << r.output;
}

// Chapter 3 keeps chapter 1's checkpoints too (through the harness, as chapter 2).
TEST(StreamTowers, FiveStepsPlusResumeFiveEqualTenByteForByte) {
  data::testing::TempDir dir;
  testing::expect_exact_resume("03_stream_towers", dir.path());
}

}  // namespace
}  // namespace towers

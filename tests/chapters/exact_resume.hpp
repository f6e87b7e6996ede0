// SPDX-License-Identifier: MIT
// The exact-resume check of the tower chapters that keep chapter 1's checkpoints
// (chapters 2 and 3): a tiny CIFAR-10 folder, and 10 steps in one go against 5 steps
// plus a resume of 5, compared byte for byte.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "data/cifar10.hpp"
#include "data/synthetic.hpp"
#include "program.hpp"

namespace towers::testing {

/// Writes a tiny CIFAR-10 folder into `dir`: five training files of 6 records (an epoch
/// of 30 is 3 steps of 2 towers x 4, 6 images dropped) and a test file of 20. Returns the
/// flags of a quick 2-tower host run on it.
inline std::string tiny_set(const std::filesystem::path& dir) {
  const data::Dataset train = data::generate_synthetic(5, data::Split::kTrain, 0, 5 * 6);
  for (int f = 0; f < 5; ++f) {
    data::write_records(dir / ("data_batch_" + std::to_string(f + 1) + ".bin"), train, f * 6, 6);
  }
  data::write_records(data::test_file(dir), data::generate_synthetic(5, data::Split::kTest, 0, 20));
  return "--backend host --devices 2 --batch-size 4 --log-every 1 --data-dir " + dir.string() + " ";
}

/// The bytes of `file` ("" when it cannot be read).
inline std::string bytes_of(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Runs `program` 10 steps, and 5 steps then 5 with --resume, in folders under `dir`
/// (which tiny_set filled); expects equal model.ckpt-10 and --save-params bytes. Step 5
/// lies mid-epoch (epoch 1, position 16): the resumed run must dequeue exactly the global
/// batches the straight run dequeued, and continue the learning-rate schedule.
inline void expect_exact_resume(const std::string& program, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const std::string flags = tiny_set(dir);
  const fs::path straight = dir / "straight", split = dir / "split";
  auto a = run(program, flags + "--steps 10 --checkpoint-dir " + straight.string() +
                            " --save-params " + (dir / "straight.params").string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  auto b1 = run(program, flags + "--steps 5 --checkpoint-dir " + split.string());
  ASSERT_EQ(b1.exit_code, 0) << b1.output;
  EXPECT_NE(b1.output.find("saved " + (split / "model.ckpt-5").string()), std::string::npos) << b1.output;
  auto b2 = run(program, flags + "--steps 5 --resume --checkpoint-dir " + split.string() +
                             " --save-params " + (dir / "split.params").string());
  ASSERT_EQ(b2.exit_code, 0) << b2.output;
  EXPECT_NE(b2.output.find("resumed from " + (split / "model.ckpt-5").string() + " at step 5"),
            std::string::npos) << b2.output;
  EXPECT_NE(b2.output.find(": step 9, loss = "), std::string::npos) << b2.output;  // global steps
  EXPECT_EQ(b2.last("steps"), "5");
  EXPECT_EQ(b2.last("global_step"), "10");
  EXPECT_EQ(a.last("global_step"), "10");
  EXPECT_EQ(a.last("final_loss"), b2.last("final_loss"));
  const std::string checkpoint = bytes_of(straight / "model.ckpt-10");
  ASSERT_FALSE(checkpoint.empty()) << a.output;
  // EXPECT_TRUE, not EXPECT_EQ: a diff of two 4 MB strings would take gtest minutes.
  EXPECT_TRUE(checkpoint == bytes_of(split / "model.ckpt-10")) << "model.ckpt-10 differs";
  const std::string params = bytes_of(dir / "straight.params");
  ASSERT_FALSE(params.empty()) << a.output;
  EXPECT_TRUE(params == bytes_of(dir / "split.params")) << "--save-params files differ";
}

}  // namespace towers::testing

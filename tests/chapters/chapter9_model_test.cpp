// SPDX-License-Identifier: MIT
// Chapter 9 with the real model (--model cifar): the CIFAR-10 network cut into p stages,
// trained with m micro-batches per step, ends with the bits of one device that
// accumulates the same m micro-batches' gradients (01_single_gpu --accumulate m), for
// GPipe and 1F1B, p = 2 and 4; its checkpoints are chapter 1's, byte for byte, and either
// program resumes the other's; the stage holding conv2 sets the pace; and what the real
// model cannot do is refused before any work. Tiny batches, two steps: seconds.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "base/temp_dir.hpp"
#include "program.hpp"

namespace towers {
namespace {

using testing::ProgramRun;
using testing::run;

std::string file_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<double> numbers(const std::string& list) {
  std::vector<double> values;
  std::stringstream items(list);
  for (std::string item; std::getline(items, item, ',');) values.push_back(std::stod(item));
  return values;
}

// Batch 8 in 4 micro-batches of 2, two steps, seed 1: both programs dequeue the same
// batches and start from the same parameters. Chapter 1 runs one thread per op, as each
// simulated device does.
const std::string kSteps = "--backend host --batch-size 8 --steps 2 --seed 1 ";

ProgramRun model_pipeline(const std::string& args) {
  return run("09_pipeline", kSteps + "--model cifar --micro-batches 4 " + args);
}

TEST(Chapter9Model, StagesEndWithTheBitsOfOneDeviceAccumulatingTheSameMicroBatches) {
  const base::TempDir scratch("ch9-model");
  const auto one = scratch.path() / "one-device.params";
  const ProgramRun reference = run(
      "01_single_gpu", kSteps + "--host-threads 1 --accumulate 4 --save-params " + one.string());
  ASSERT_EQ(reference.exit_code, 0) << reference.output;
  const std::string expected = file_bytes(one);
  ASSERT_FALSE(expected.empty());
  for (const std::string schedule : {"gpipe", "1f1b"}) {
    // p = 2 at the default cut (before conv2); p = 4 at one given with --split.
    for (const std::string shape : {"--stages 2", "--stages 4 --split pool1,conv2,local3"}) {
      const auto file = scratch.path() / (schedule + "-" + shape.substr(9, 1) + ".params");
      const ProgramRun r = model_pipeline("--schedule " + schedule + " " + shape +
                                          " --save-params " + file.string());
      ASSERT_EQ(r.exit_code, 0) << r.output;
      // Micro-batches in flight per stage: GPipe all m = 4, 1F1B p - s.
      const bool four = shape.find("--stages 4") != std::string::npos;
      EXPECT_EQ(r.last("activation_slots"), schedule == "gpipe" ? (four ? "4,4,4,4" : "4,4")
                                                                 : (four ? "4,3,2,1" : "2,1"))
          << r.output;
      EXPECT_TRUE(file_bytes(file) == expected)
          << schedule << " " << shape << ": the parameters differ from one device's\n"
          << r.output;
    }
  }
  // The comparison can fail: two micro-batches of 4 sum in another order.
  const auto other = scratch.path() / "two-micro-batches.params";
  const ProgramRun two = run("09_pipeline", kSteps +
                                                "--model cifar --micro-batches 2 --stages 2 "
                                                "--save-params " +
                                                other.string());
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_FALSE(file_bytes(other) == expected) << "m = 2 cannot give m = 4's bits";
}

// The stage with conv2 (about 80% of the products) is the slowest; it is busy most of
// the step while the stage before it mostly waits for its gradients.
// The stages' checkpoint is chapter 1's: after 2 steps, 2 stages x 4 micro-batches and one
// device with --accumulate 4 write the same model.ckpt-2, byte for byte (parameters,
// moving averages, the input's position). So chapter 9 resumes chapter 1's checkpoint and
// continues with its bits. A resume with another --batch-size or --seed is refused by
// flag, in chapter 1's words, before the stages are built.
TEST(Chapter9Model, ACheckpointIsChapter1sAndChapter9ResumesIt) {
  namespace fs = std::filesystem;
  const base::TempDir scratch("ch9-ckpt");
  const fs::path one = scratch.path() / "one", stages = scratch.path() / "stages",
                 resumed = scratch.path() / "resumed";
  const std::string common = "--backend host --batch-size 8 --seed 1 ";
  const ProgramRun reference = run("01_single_gpu", common + "--host-threads 1 --accumulate 4 "
                                   "--steps 3 --checkpoint-every 1 --checkpoint-dir " + one.string());
  ASSERT_EQ(reference.exit_code, 0) << reference.output;
  const std::string cifar = common + "--model cifar --stages 2 --micro-batches 4 ";
  const ProgramRun two = run("09_pipeline", cifar + "--steps 2 --checkpoint-dir " + stages.string());
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("saved " + (stages / "model.ckpt-2").string()), std::string::npos)
      << two.output;
  EXPECT_EQ(two.last("global_step"), "2") << two.output;
  const std::string expected = file_bytes(one / "model.ckpt-2");
  ASSERT_FALSE(expected.empty()) << reference.output;
  EXPECT_TRUE(file_bytes(stages / "model.ckpt-2") == expected) << "model.ckpt-2 differs from chapter 1's";

  fs::create_directories(resumed);
  fs::copy_file(one / "model.ckpt-2", resumed / "model.ckpt-2");
  const ProgramRun third = run("09_pipeline", cifar + "--steps 1 --resume --checkpoint-dir " +
                                                  resumed.string());
  ASSERT_EQ(third.exit_code, 0) << third.output;
  EXPECT_NE(third.output.find("resumed from " + (resumed / "model.ckpt-2").string() + " at step 2"),
            std::string::npos) << third.output;
  EXPECT_NE(third.output.find("step 2, cross-entropy"), std::string::npos) << third.output;
  EXPECT_EQ(third.last("global_step"), "3") << third.output;
  EXPECT_TRUE(file_bytes(resumed / "model.ckpt-3") == file_bytes(one / "model.ckpt-3"))
      << "chapter 9 resumed from chapter 1's step 2 does not end with chapter 1's step 3";

  const std::pair<std::string, std::string> refused[] = {
      {"--batch-size 4 --seed 1 --model cifar --stages 2 --micro-batches 4",
       "Resume with the same --batch-size"},
      {"--batch-size 8 --seed 2 --model cifar --stages 2 --micro-batches 4",
       "Resume with the same --seed"},
  };
  for (const auto& [flags, message] : refused) {
    const ProgramRun r = run("09_pipeline", "--backend host --steps 1 --resume --checkpoint-dir " +
                                                stages.string() + " " + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << flags << "\n" << r.output;
    EXPECT_EQ(r.output.find("stage 0"), std::string::npos) << "built the stages first: " << flags;
  }
}

// A first SIGTERM (a scheduler's, or Ctrl-C's SIGINT) ends the stages' run after the step
// it is in, with a checkpoint of that step, exit status 143 and stopped_by in the summary.
TEST(Chapter9Model, ASigtermEndsTheRunAfterItsStepWithACheckpoint) {
  const base::TempDir scratch("ch9-stop");
  const auto ckpt = scratch.path() / "ckpt";
  const ProgramRun r = testing::run_and_signal(
      "09_pipeline", "--backend host --model cifar --stages 2 --micro-batches 2 --batch-size 4 "
      "--steps 1000 --checkpoint-dir " + ckpt.string(), "step 1,", SIGTERM);
  EXPECT_EQ(r.exit_code, 143) << r.output;
  EXPECT_EQ(r.last("stopped_by"), "SIGTERM") << r.output;
  const std::string step = r.last("global_step");
  ASSERT_FALSE(step.empty()) << r.output;
  EXPECT_GE(std::stoi(step), 2) << r.output;
  EXPECT_LT(std::stoi(step), 1000) << r.output;
  EXPECT_EQ(r.last("steps"), step) << r.output;
  EXPECT_NE(r.output.find("saved " + (ckpt / ("model.ckpt-" + step)).string()), std::string::npos)
      << r.output;
}

TEST(Chapter9Model, TheStageWithConv2SetsThePace) {
  struct Case {
    std::string flags;
    int conv2_stage;
  };
  for (const Case& c : {Case{"--stages 2", 1}, Case{"--stages 4 --split pool1,norm1,conv2", 3}}) {
    const ProgramRun r = model_pipeline(c.flags);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::vector<double> busy = numbers(r.last("stage_busy_ms"));
    ASSERT_EQ(busy.size(), static_cast<std::size_t>(r.number("stages"))) << r.output;
    EXPECT_EQ(r.number("slowest_stage"), c.conv2_stage) << r.output;
    // Busier than the other stages together: a share of their busy time, not of the
    // step's wall time, which a loaded machine stretches with waits that are no stage's
    // work (a hunt under load saw conv2's stage at 37 % and 45 % of the step).
    double others = 0;
    for (std::size_t s = 0; s < busy.size(); ++s) {
      if (static_cast<int>(s) != c.conv2_stage) others += busy[s];
    }
    EXPECT_GT(busy[c.conv2_stage], others) << r.output;
    for (std::size_t s = 0; s < busy.size(); ++s) {
      EXPECT_GT(busy[s], 0.0) << "stage " << s << " ran nothing?\n" << r.output;
      if (static_cast<int>(s) != c.conv2_stage) {
        EXPECT_LT(busy[s], busy[c.conv2_stage]) << r.output;
      }
    }
  }
}

TEST(Chapter9Model, WhatTheRealModelCannotDoIsRefusedBeforeTheRun) {
  const std::pair<std::string, std::string> cases[] = {
      {"--model cifar --schedule interleaved --virtual 2 --stages 2", "gpipe or 1f1b"},
      {"--model cifar --stages 10 --micro-batches 10 --batch-size 10", "at most 9 stages"},
      {"--model cifar --micro-batches 3 --batch-size 8", "not a multiple of --micro-batches 3"},
      {"--model cifar --stages 2 --split conv3", "'conv3' is not a layer"},
      {"--model cifar --stages 2 --split conv1", "'conv1' is not a layer"},
      {"--model cifar --stages 3 --split conv2", "names 1 cut(s); 3 stages need 2"},
      {"--model cifar --stages 3 --split local3,conv2", "forward order"},
      {"--model cifar --kernel-ms 5", "--kernel-ms belongs to --model synthetic"},
      {"--model cifar --probe", "--probe belongs to --model synthetic"},
      {"--split conv2", "add --model cifar"},
      // The stand-in stages have no parameters to save; the checkpoint flags need a folder.
      {"--checkpoint-dir ch9-never-made", "--model synthetic has no parameters to save"},
      {"--resume-if-present", "--model synthetic has no parameters to save"},
      {"--model cifar --checkpoint-every 5", "--checkpoint-every needs --checkpoint-dir"},
      {"--model cifar --resume", "--resume needs --checkpoint-dir"},
      {"--model resnet", "--model"},
  };
  for (const auto& [flags, message] : cases) {
    const ProgramRun r = run("09_pipeline", "--backend host " + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << flags << "\n" << r.output;
    EXPECT_EQ(r.output.find("stage 0"), std::string::npos) << "ran before refusing: " << flags;
  }
}

// A stage's device too small for its activations (issue 38): the advice named chapter 2's
// --towers and --towers-per-device, which chapter 9 does not have; and the stages' buffers
// were freed while a queued copy still wrote into them (glibc: "corrupted double-linked
// list", exit 134). Now it is a usage error in this program's flags, before the first step.
TEST(Chapter9Model, AStageOutOfMemorySaysWhatToDoInThisProgramsFlags) {
  for (const char* schedule : {"gpipe", "1f1b"}) {
    const ProgramRun r = run("09_pipeline", std::string("--backend host --model cifar --steps 1 "
                                                        "--batch-size 9320 --micro-batches 1 "
                                                        "--stages 2 --devices 1 --schedule ") +
                                                schedule);
    EXPECT_EQ(r.exit_code, 2) << schedule << "\n" << r.output;
    EXPECT_NE(r.output.find("out of memory on host:0"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("Use a smaller --batch-size or more --micro-batches"), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("more --devices (2 stages share 1 device(s) now)"), std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("--towers"), std::string::npos) << "a flag chapter 9 lacks: " << r.output;
    EXPECT_EQ(r.output.find("step 0"), std::string::npos) << "ran before refusing: " << r.output;
    // GPipe stashes all m micro-batches; 1F1B, the default, at most p: only GPipe is told.
    EXPECT_EQ(r.output.find("--schedule 1f1b") != std::string::npos,
              std::string(schedule) == "gpipe") << r.output;
  }
}

}  // namespace
}  // namespace towers

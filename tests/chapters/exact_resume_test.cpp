// SPDX-License-Identifier: MIT
// Exact resume (issue 12, docs/reliability.md): stopping and resuming is the same as never
// stopping. Chapter 1 is the only program that saves checkpoints (--checkpoint-dir);
// these tests run it as a user would, stop it — by finishing, by --steps, or by SIGKILL at
// seeded random moments — resume it, and compare the checkpoint files byte for byte with
// those of a run that was never stopped. Bytes include the parameters, the moving
// averages and the input's position, so equal bytes mean an identical continuation.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "../data/temp_dir.hpp"
#include "cli/folder_lock.hpp"
#include "data/synthetic.hpp"
#include "model/checkpoint.hpp"
#include "program.hpp"

namespace towers {
namespace {

namespace fs = std::filesystem;
using data::testing::TempDir;
using testing::run;

// A tiny CIFAR-10 folder: five files of 4 records. With --batch-size 4 an epoch is 5
// steps, so a few steps cross epochs and every reshuffle is exercised.
std::string flags(const fs::path& data_dir, const fs::path& ckpt_dir, int batch_size = 4) {
  if (!fs::exists(data_dir / "data_batch_5.bin")) {
    fs::create_directories(data_dir);
    const data::Dataset train = data::generate_synthetic(11, data::Split::kTrain, 0, 5 * 4);
    for (int f = 0; f < 5; ++f) {
      data::write_records(data_dir / ("data_batch_" + std::to_string(f + 1) + ".bin"), train, f * 4, 4);
    }
  }
  return "--backend host --host-threads 1 --batch-size " + std::to_string(batch_size) +
         " --log-every 1 --data-dir " +
         data_dir.string() + " --checkpoint-dir " + ckpt_dir.string() + " ";
}

std::string bytes_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// 7 steps cross the epoch boundary at step 5; resuming at 7 lands mid-epoch 1.
TEST(ExactResume, FourteenStepsEqualSevenPlusResumeSevenByteForByte) {
  TempDir dir;
  const fs::path data = dir.path() / "data", straight = dir.path() / "straight",
                 split = dir.path() / "split";
  auto a = run("01_single_gpu", flags(data, straight) + "--steps 14");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  auto b1 = run("01_single_gpu", flags(data, split) + "--steps 7");
  ASSERT_EQ(b1.exit_code, 0) << b1.output;
  auto b2 = run("01_single_gpu", flags(data, split) + "--steps 7 --resume");
  ASSERT_EQ(b2.exit_code, 0) << b2.output;
  EXPECT_EQ(b2.last("global_step"), "14");
  EXPECT_EQ(a.last("final_loss"), b2.last("final_loss"));

  const model::TrainingState one = model::load_checkpoint(straight / "model.ckpt-14");
  const model::TrainingState two = model::load_checkpoint(split / "model.ckpt-14");
  EXPECT_EQ(one.params, two.params);
  EXPECT_EQ(one.moving_averages, two.moving_averages);
  ASSERT_TRUE(one.input.has_value());
  EXPECT_EQ(one.input->epoch, 2u);  // 14 steps of 5 per epoch: the third epoch
  EXPECT_EQ(one.input->position, 16u);
  EXPECT_EQ(one.input, two.input);
  EXPECT_EQ(bytes_of(straight / "model.ckpt-14"), bytes_of(split / "model.ckpt-14"));
}

TEST(ExactResume, AResumeWithAnotherBatchOrSeedIsRefusedByFlag) {
  TempDir dir;
  const fs::path data = dir.path() / "data", ckpt = dir.path() / "ckpt";
  ASSERT_EQ(run("01_single_gpu", flags(data, ckpt) + "--steps 2").exit_code, 0);
  auto batch = run("01_single_gpu", flags(data, ckpt, 2) + "--steps 1 --resume");
  EXPECT_EQ(batch.exit_code, 2) << batch.output;
  EXPECT_NE(batch.output.find("Resume with the same --batch-size"), std::string::npos) << batch.output;
  auto seed = run("01_single_gpu", flags(data, ckpt) + "--steps 1 --resume --seed 5");
  EXPECT_EQ(seed.exit_code, 2) << seed.output;
  EXPECT_NE(seed.output.find("Resume with the same --seed"), std::string::npos) << seed.output;
}

TEST(ExactResume, CheckpointEverySetsTheCadenceAndIsValidated) {
  TempDir dir;
  const fs::path data = dir.path() / "data", ckpt = dir.path() / "ckpt";
  auto r = run("01_single_gpu", flags(data, ckpt) + "--steps 7 --checkpoint-every 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(ckpt)) names.insert(e.path().filename().string());
  names.erase(kFolderLockName);  // the folder's lock (cli/folder_lock.hpp)
  // Multiples of 3, and the last step.
  EXPECT_EQ(names, (std::set<std::string>{"model.ckpt-3", "model.ckpt-6", "model.ckpt-7"}));

  for (const char* bad : {"0", "-2", "x"}) {
    auto refused = run("01_single_gpu", flags(data, ckpt) + "--steps 1 --resume --checkpoint-every " + bad);
    EXPECT_EQ(refused.exit_code, 2) << refused.output;
    EXPECT_NE(refused.output.find("--checkpoint-every"), std::string::npos) << refused.output;
  }
  auto alone = run("01_single_gpu", "--backend host --steps 1 --checkpoint-every 5");
  EXPECT_EQ(alone.exit_code, 2) << alone.output;
  EXPECT_NE(alone.output.find("--checkpoint-every needs --checkpoint-dir"), std::string::npos)
      << alone.output;
}

// Starts chapter 1 with `args`, reads its output until it has printed `marker`, waits
// `delay`, then SIGKILLs it: no handler runs, a save may be cut off mid-write.
void kill_after(const std::string& args, const std::string& marker, std::chrono::microseconds delay) {
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::close(out[0]);
    const std::string command = std::string(TOWERS_BIN_DIR) + "/01_single_gpu " + args;
    ::execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  std::string output;
  char chunk[4096];
  for (ssize_t n; output.find(marker) == std::string::npos &&
                  (n = ::read(out[0], chunk, sizeof chunk)) > 0;) {
    output.append(chunk, static_cast<std::size_t>(n));
  }
  std::this_thread::sleep_for(delay);
  ::kill(pid, SIGKILL);
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_NE(output.find(marker), std::string::npos) << "ended before '" << marker << "':\n" << output;
}

// The kill test: SIGKILL at three seeded random points of a run that saves every step;
// after each kill the newest checkpoint loads, and resuming ends exactly where a run
// that was never killed ends, file for file.
TEST(ExactResume, SigkillAtRandomPointsLosesNothingAndResumesExactly) {
  // 9 steps: three kills of at most 3 steps each still land before the last step (8).
  constexpr int kSteps = 9;
  TempDir dir;
  const fs::path data = dir.path() / "data", uninterrupted = dir.path() / "uninterrupted",
                 killed = dir.path() / "killed";
  auto reference = run("01_single_gpu", flags(data, uninterrupted) + "--checkpoint-every 1 --steps " +
                                            std::to_string(kSteps));
  ASSERT_EQ(reference.exit_code, 0) << reference.output;

  std::mt19937 rng(12);  // seeded: the same kill points on every run of the test
  std::int64_t reached = 0;
  for (int kill = 0; kill < 3; ++kill) {
    // A step the next run will log (steps are logged by their 0-based index), then a
    // delay inside that step or its save.
    const auto at = std::uniform_int_distribution<std::int64_t>(reached, reached + 2)(rng);
    const std::chrono::microseconds delay(std::uniform_int_distribution<int>(0, 40000)(rng));
    kill_after(flags(data, killed) + "--checkpoint-every 1 --resume-if-present --steps " +
                   std::to_string(kSteps - reached),
               "step " + std::to_string(at) + ",", delay);
    // What a user finds after the crash: the newest complete checkpoint, which loads.
    const auto latest = model::latest_checkpoint(killed);
    if (!latest) {  // killed before the first save finished: nothing to lose yet
      ASSERT_EQ(reached, 0) << "kill " << kill << " at step " << at << " lost the checkpoints";
      continue;
    }
    const model::TrainingState state = model::load_checkpoint(*latest);
    EXPECT_GE(state.global_step, reached);
    reached = state.global_step;
    EXPECT_EQ(bytes_of(*latest), bytes_of(uninterrupted / latest->filename()))
        << "kill " << kill << ": " << *latest << " differs from the uninterrupted run's";
  }
  auto last = run("01_single_gpu", flags(data, killed) + "--checkpoint-every 1 --resume-if-present --steps " +
                                       std::to_string(kSteps - reached));
  ASSERT_EQ(last.exit_code, 0) << last.output;
  for (const auto& entry : fs::directory_iterator(killed)) {
    const std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name << " was left behind";
  }
  const std::string final_name = model::checkpoint_name(kSteps);
  EXPECT_EQ(bytes_of(killed / final_name), bytes_of(uninterrupted / final_name));
}

}  // namespace
}  // namespace towers

// SPDX-License-Identifier: MIT
// Chapter 5's claims, tested by starting the program with mpiexec as a learner does: ranks
// train one tower each and meet in the all-reduce; the ring over MPI_Sendrecv reaches
// chapter 4's parameters bit for bit (MPI_Allreduce to rounding); a divergence is caught;
// a rank that dies, stalls or throws ends the job with a message, never a hang; the trace
// has one process per rank; rank 0's checkpoints resume every rank exactly, also after a
// SIGTERM to one rank and after every rank was killed with SIGKILL.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <signal.h>

#include "../data/temp_dir.hpp"
#include "data/cifar10.hpp"
#include "data/synthetic.hpp"
#include "exact_resume.hpp"
#include "model/checkpoint.hpp"
#include "model/parameters.hpp"
#include "program.hpp"
#include "ranks.hpp"

namespace towers {
namespace {

using testing::RankRun;
using testing::run;
using testing::saved_params;

const std::string kSmall = "--backend host --batch-size 8 --log-every 1 ";

std::filesystem::path temp_file(const std::string& name) {
  return testing::temp_file("towers-ch5", name);
}

// mpiexec -n `ranks` 05_ranks `args`, bounded by `timeout_s` (ranks.hpp).
std::string ranks_command(int ranks, const std::string& args, int timeout_s) {
  return testing::mpiexec_command("05_ranks", ranks, args, timeout_s);
}
RankRun run_ranks(int ranks, const std::string& args, int timeout_s = 90) {
  return testing::run_ranks("05_ranks", ranks, args, timeout_s);
}

TEST(Ranks, StartedAloneItIsOneRank) {
  auto r = run("05_ranks", kSmall + "--steps 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("ranks"), "1") << r.output;
  EXPECT_EQ(r.last("towers"), "1") << r.output;
  EXPECT_EQ(r.last("allreduce"), "mpi") << "the host backend's default is MPI_Allreduce";
}

TEST(Ranks, TwoRanksTrainAndMeetInTheAllReduce) {
  auto r = run_ranks(2, kSmall + "--steps 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.summaries.size(), 1u) << "rank 0 alone prints the summary\n" << r.output;
  EXPECT_EQ(r.last("ranks"), "2") << r.output;
  EXPECT_EQ(r.last("towers"), "2") << r.output;
  EXPECT_EQ(r.last("towers_meet"), "allreduce");
  EXPECT_EQ(r.last("allreduce"), "mpi");
  EXPECT_GT(r.number("allreduce_ms"), 0.0) << r.output;
  EXPECT_EQ(r.last("param_checks"), "1") << r.output;
}

TEST(Ranks, FourRanksKeepBitIdenticalParameters) {
  auto r = run_ranks(4, kSmall + "--steps 4 --check-every 1 --allreduce ring");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("ranks"), "4") << r.output;
  EXPECT_EQ(r.last("allreduce"), "ring");
  EXPECT_EQ(r.last("param_checks"), "4") << r.output;
}

// The ring over MPI_Sendrecv cuts the same chunks and adds them in the same order as
// chapter 4's in-process ring; rank r reads chapter 4's shard r. So with N ranks it must
// end with chapter 4's parameters (N towers) bit for bit, step after step.
void expect_ring_matches_chapter4(int n) {
  auto ch4 = temp_file("ch4-" + std::to_string(n) + ".ckpt");
  auto ch5 = temp_file("ch5-ring-" + std::to_string(n) + ".ckpt");
  auto a = run("04_nccl_iterator", kSmall + "--steps 3 --allreduce ring --devices " +
                                       std::to_string(n) + " --save-params " + ch4.string());
  auto b = run_ranks(n, kSmall + "--steps 3 --allreduce ring --save-params " + ch5.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(saved_params(ch4), saved_params(ch5)) << n << " ranks vs " << n << " towers";
  EXPECT_EQ(a.last("final_loss"), b.last("final_loss"));
}

TEST(Ranks, RingOverSendrecvMatchesChapter4BitForBitWithTwoRanks) { expect_ring_matches_chapter4(2); }
TEST(Ranks, RingOverSendrecvMatchesChapter4BitForBitWithFourRanks) { expect_ring_matches_chapter4(4); }

// MPI_Allreduce picks its own algorithm, so the four gradients of an element may be added
// in another order than the ring's (Open MPI: recursive doubling for small messages, a
// ring with other chunks for large ones). Float addition is not associative: the sum may
// differ by an ulp or two, which times the learning rate is far below 1e-5 of the largest
// update. Compared after one step: later steps carry the differences through the next
// passes. (With two ranks there is one addition, a + b == b + a, and the bits agree.)
TEST(Ranks, MpiAllreduceMatchesChapter4UpToSummationOrder) {
  auto start = temp_file("start.ckpt"), ch4 = temp_file("ch4-1step.ckpt"),
       ch5 = temp_file("ch5-mpi-1step.ckpt");
  auto s = run("04_nccl_iterator", kSmall + "--steps 0 --devices 1 --save-params " + start.string());
  auto a = run("04_nccl_iterator", kSmall + "--steps 1 --devices 4 --allreduce ring --save-params " +
                                       ch4.string());
  auto b = run_ranks(4, kSmall + "--steps 1 --allreduce mpi --save-params " + ch5.string());
  ASSERT_EQ(s.exit_code, 0) << s.output;
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  ASSERT_EQ(saved_params(ch5).size(), model::kNumParameters);
  const auto [largest_update, largest_difference] = testing::one_step_apart(start, ch4, ch5);
  std::printf("4 ranks, MPI_Allreduce vs chapter 4's ring: largest update %.3g, largest "
              "difference %.3g\n", largest_update, largest_difference);
  EXPECT_GT(largest_update, 0.0);
  EXPECT_LE(largest_difference, 1e-5 * largest_update);
}

TEST(Ranks, AnInjectedDivergenceStopsEveryRankNamingTheOneThatDiffers) {
  auto r = run_ranks(4, kSmall + "--steps 6 --check-every 3 --inject-divergence 1");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.summaries.empty()) << "training must stop at the check\n" << r.output;
  EXPECT_NE(r.output.find("differ after step 2: ranks 0, 1, 2 have checksum"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("rank 3 has checksum"), std::string::npos) << r.output;
}

// A rank killed without a word (SIGKILL, as the OOM killer does): mpiexec sees the process
// end and takes the job down, naming the rank and the signal.
TEST(Ranks, AKilledRankEndsTheJobNamingIt) {
  auto r = run_ranks(2, kSmall + "--steps 50 --fail-rank 1 --fail-at-step 2 --fail-how kill");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.summaries.empty()) << r.output;
  EXPECT_LT(r.seconds, 30.0) << "the job must end within the bound\n" << r.output;
  EXPECT_NE(r.output.find("rank 1 fails (kill) at step 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("process rank 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("signal 9"), std::string::npos) << r.output;
}

// A rank that stops answering but stays alive: mpiexec cannot tell. The other rank waits in
// the all-reduce until the watchdog (3 s here) ends the job, naming what it waited for and
// the rank that never reached it.
TEST(Ranks, AStalledRankEndsTheJobWithinTheWatchdogsBound) {
  auto r = run_ranks(2, kSmall + "--steps 50 --fail-rank 1 --fail-at-step 2 --fail-how stall "
                                 "--collective-timeout 3");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.summaries.empty()) << r.output;
  EXPECT_LT(r.seconds, 30.0) << "3 s of watchdog plus start-up\n" << r.output;
  EXPECT_NE(r.output.find("towers: rank 0 of 2: mpi allreduce of step 2 did not finish within 3 s"),
            std::string::npos) << r.output;
  // ...and names the rank that never arrived, not only the one that waited.
  EXPECT_NE(r.output.find("rank 1 had not reached it"), std::string::npos) << r.output;
}

TEST(Ranks, ARankThatThrowsEndsTheJobNamingItselfAndTheCause) {
  auto r = run_ranks(2, kSmall + "--steps 50 --fail-rank 1 --fail-at-step 1 --fail-how throw");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_LT(r.seconds, 30.0) << r.output;
  EXPECT_NE(r.output.find("towers: rank 1 of 2: fail-rank: rank 1 threw at step 1"),
            std::string::npos) << r.output;
}

TEST(Ranks, NcclOnTheHostBackendIsAUsageErrorSaidOnce) {
  auto r = run_ranks(2, kSmall + "--steps 1 --allreduce nccl");
  EXPECT_NE(r.exit_code, 0) << r.output;
  const std::string said = "--allreduce nccl needs the cuda backend";
  const auto first = r.output.find(said);
  ASSERT_NE(first, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(said, first + 1), std::string::npos) << "rank 0 alone says it\n" << r.output;
}

// The simulated link slows copies between one process's devices; a rank has one device and
// talks over MPI, so the flags would do nothing: refused, saying where they apply.
TEST(Ranks, TheSimulatedLinksFlagsAreRefusedSayingWhereTheyApply) {
  for (const std::string flag : {"--link-gbps 1", "--link-latency-us 100"}) {
    auto r = run_ranks(2, kSmall + "--steps 1 " + flag, 30);
    EXPECT_EQ(r.exit_code, 2) << flag << "\n" << r.output;
    EXPECT_TRUE(r.summaries.empty()) << r.output;
    const std::string said = "model the link between the simulated devices of one process";
    const auto first = r.output.find(said);
    ASSERT_NE(first, std::string::npos) << flag << "\n" << r.output;
    EXPECT_EQ(r.output.find(said, first + 1), std::string::npos) << "rank 0 alone says it\n" << r.output;
    EXPECT_NE(r.output.find("scripts/two-hosts up --rate"), std::string::npos) << r.output;
  }
}

// The gathered trace: one Chrome-trace process per rank, and every rank's all-reduce of a
// step overlaps every other's on rank 0's clock: none can finish before all have started.
TEST(Ranks, TraceHasOneProcessPerRankMeetingInTheAllReduce) {
  auto json = temp_file("ranks.json");
  auto r = run_ranks(3, kSmall + "--steps 2 --trace " + json.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::stringstream text;
  text << std::ifstream(json).rdbuf();
  const std::string trace = text.str();
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_NE(trace.find("\"name\":\"rank " + std::to_string(rank) + "\""), std::string::npos)
        << "rank " << rank << " has no process in the trace";
    EXPECT_NE(r.output.find("dev" + std::to_string(rank) + " s0"), std::string::npos)
        << "the timeline has a row for rank " << rank << "\n" << r.output;
  }
  // {"ph":"X","name":"mpi allreduce","pid":R,"tid":T,"ts":S,"dur":D,"args":{"tower":R,"step":1}}
  const std::regex span(R"re("name":"mpi allreduce","pid":(\d+),"tid":\d+,"ts":([0-9.]+),"dur":([0-9.]+),"args":\{"tower":\d+,"step":1\})re");
  double latest_start = 0, earliest_end = 1e300;
  int spans = 0;
  for (auto it = std::sregex_iterator(trace.begin(), trace.end(), span); it != std::sregex_iterator(); ++it) {
    const double start = std::stod((*it)[2]), end = start + std::stod((*it)[3]);
    latest_start = std::max(latest_start, start);
    earliest_end = std::min(earliest_end, end);
    ++spans;
  }
  EXPECT_EQ(spans, 3) << "one all-reduce per rank in step 1";
  // The clocks are aligned by a barrier, to within its exit skew: allow 2 ms.
  EXPECT_LE(latest_start, earliest_end + 2000.0) << "the ranks' all-reduces must overlap";
}

// A tiny CIFAR-10 folder of 5 files of 3 records: 2 ranks of batch 2 take 4 examples a
// step, so an epoch is 3 steps (3 examples dropped) and 4 + 4 steps cross two epochs, one
// on each side of the resume.
std::string resume_flags(const std::filesystem::path& dir, const std::string& ckpt) {
  const std::filesystem::path data = dir / "data";
  if (!std::filesystem::exists(data / "data_batch_5.bin")) {
    std::filesystem::create_directories(data);
    const data::Dataset train = data::generate_synthetic(11, data::Split::kTrain, 0, 5 * 3);
    for (int f = 0; f < 5; ++f) {
      data::write_records(data / ("data_batch_" + std::to_string(f + 1) + ".bin"), train, f * 3, 3);
    }
  }
  return "--backend host --batch-size 2 --log-every 1 --data-dir " + data.string() +
         " --checkpoint-dir " + (dir / ckpt).string() + " --checkpoint-every 4 ";
}

using testing::bytes_of;

// Rank 0 writes the checkpoint; each rank's input position is gathered into it, and
// --resume hands rank 0's reading to every rank. Equal bytes of the final parameters and
// of model.ckpt-8 (which holds the moving averages and the input position too) mean every
// rank continued exactly: a rank fed the wrong shard would change the all-reduced gradient.
TEST(Ranks, EightStepsEqualFourPlusResumeFourByteForByte) {
  data::testing::TempDir dir;
  const auto straight = dir.path() / "straight.ckpt", split = dir.path() / "split.ckpt";
  auto a = run_ranks(2, resume_flags(dir.path(), "a") + "--steps 8 --save-params " + straight.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  auto b1 = run_ranks(2, resume_flags(dir.path(), "b") + "--steps 4");
  ASSERT_EQ(b1.exit_code, 0) << b1.output;
  EXPECT_EQ(b1.output.find("saved " + (dir.path() / "b" / "model.ckpt-4").string()),
            b1.output.rfind("saved " + (dir.path() / "b" / "model.ckpt-4").string()))
      << "rank 0 alone saves\n" << b1.output;
  auto b2 = run_ranks(2, resume_flags(dir.path(), "b") + "--steps 4 --resume --save-params " +
                             split.string());
  ASSERT_EQ(b2.exit_code, 0) << b2.output;
  EXPECT_NE(b2.output.find("resumed from " + (dir.path() / "b" / "model.ckpt-4").string() +
                           " at step 4"), std::string::npos) << b2.output;
  EXPECT_EQ(b2.last("global_step"), "8") << b2.output;
  EXPECT_EQ(b2.last("steps"), "4") << b2.output;
  EXPECT_EQ(a.last("final_loss"), b2.last("final_loss"));

  const model::TrainingState four = model::load_checkpoint(dir.path() / "b" / "model.ckpt-4");
  ASSERT_TRUE(four.input.has_value());
  EXPECT_EQ(four.input->global_batch, 4u);
  EXPECT_EQ(four.input->epoch, 1u);  // 4 steps of 3 per epoch: the second epoch, one batch in
  EXPECT_EQ(four.input->position, 4u);
  // Compared as flags: a failure would otherwise print megabytes of checkpoint.
  const std::string final_params = bytes_of(straight);
  EXPECT_FALSE(final_params.empty());
  EXPECT_TRUE(final_params == bytes_of(split)) << "--save-params differ after the resume";
  EXPECT_TRUE(bytes_of(dir.path() / "a" / "model.ckpt-8") == bytes_of(dir.path() / "b" / "model.ckpt-8"))
      << "model.ckpt-8 differs after the resume";
}

// A scheduler ending a job, or a user, may signal one rank alone. That rank finishes its
// step; the ranks agree (MPI_Allreduce of the stop flag) to stop after the same step, save
// a checkpoint of it and exit; --resume then continues as if nothing had happened: N steps
// with the stop in between equal N straight, byte for byte.
TEST(Ranks, ASigtermToOneRankStopsEveryRankAfterTheSameStepAndSaves) {
  data::testing::TempDir dir;
  const std::string flags = resume_flags(dir.path(), "stopped");
  const std::string command = ranks_command(2, flags + "--steps 100000", 90);
  const int k = testing::stop_one_rank_with_sigterm(command, "05_ranks", dir.path() / "stopped");
  ASSERT_GT(k, 0);

  const auto straight = dir.path() / "straight.ckpt", resumed = dir.path() / "resumed.ckpt";
  auto rest = run_ranks(2, flags + "--steps 3 --resume --save-params " + resumed.string());
  ASSERT_EQ(rest.exit_code, 0) << rest.output;
  EXPECT_EQ(rest.last("global_step"), std::to_string(k + 3)) << rest.output;
  auto whole = run_ranks(2, resume_flags(dir.path(), "whole") + "--steps " +
                                std::to_string(k + 3) + " --save-params " + straight.string());
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  const std::string final_params = bytes_of(straight);
  EXPECT_FALSE(final_params.empty());
  EXPECT_TRUE(final_params == bytes_of(resumed)) << "--save-params differ after the stop";
}

// Ten steps in one go, and ten again saving every step but with every rank SIGKILLed once
// rank 0 has logged step 3, then resumed: the last checkpoint and --save-params are equal
// byte for byte (kill_nine.hpp). An epoch is 3 steps of 2 ranks x 2, so the kill lands
// mid-epoch and every rank's iterator must restart at the global batch where the job stood.
TEST(Ranks, KillNineOfEveryRankAndResumeContinuesByteForByte) {
  data::testing::TempDir dir;
  resume_flags(dir.path(), "unused");  // writes the tiny set's files
  const std::string flags = "--backend host --batch-size 2 --log-every 1 --data-dir " +
                            (dir.path() / "data").string() + " ";
  testing::expect_kill_nine_and_exact_resume(dir.path(), flags, testing::two_ranks("05_ranks"));
}

// The checkpoint's global batch is ranks x batch: resumed with another rank count, the
// input could not continue, and every rank refuses before step 0 with the flag to fix.
// A folder rank 0 cannot use ends every rank with its message, never a hang.
TEST(Ranks, AResumeWithOtherRanksOrABadFolderEndsEveryRankWithOneMessage) {
  data::testing::TempDir dir;
  auto made = run_ranks(2, resume_flags(dir.path(), "c") + "--steps 1");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  auto other = run_ranks(1, resume_flags(dir.path(), "c") + "--steps 1 --resume", 30);
  EXPECT_EQ(other.exit_code, 2) << other.output;
  EXPECT_NE(other.output.find("the checkpoint was made with a global batch of 4, this run has 2"),
            std::string::npos) << other.output;

  const auto file = dir.path() / "a-file";
  std::ofstream(file) << "not a folder";
  const std::string flags = "--backend host --batch-size 2 --steps 1 --checkpoint-dir " + file.string();
  auto bad = run_ranks(2, flags, 30);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_TRUE(bad.summaries.empty()) << bad.output;
  EXPECT_LT(bad.seconds, 20.0) << "refused before step 0, on every rank\n" << bad.output;
  const std::string said = "--checkpoint-dir";
  const auto first = bad.output.find("error: " + said);
  ASSERT_NE(first, std::string::npos) << bad.output;
  EXPECT_EQ(bad.output.find("error: " + said, first + 1), std::string::npos)
      << "rank 0 alone says it\n" << bad.output;
}

// A rank's device too small for its tower (issue 38's sibling of chapter 9's advice): the
// message told the ranks to use fewer towers per device (--towers-per-device, --towers),
// flags 05_ranks does not have; with one tower a device, only the batch can shrink.
TEST(Ranks, AnOutOfMemoryAdvisesOnlyWhatTheRanksCanChange) {
  auto r = run_ranks(2, "--backend host --steps 1 --batch-size 9320");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("out of memory on host:0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(1 tower(s) of batch 9320 on 1 device(s)). Use a smaller --batch-size"),
            std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("--towers"), std::string::npos) << "a flag 05_ranks lacks: " << r.output;
  EXPECT_EQ(r.output.find("step 0,"), std::string::npos) << "ran before refusing: " << r.output;
}

}  // namespace
}  // namespace towers

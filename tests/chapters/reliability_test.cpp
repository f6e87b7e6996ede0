// SPDX-License-Identifier: MIT
// Reliability (issue 25): the checks a reliability probe found missing, each tested the
// way it failed — a floating-point flag given NaN, infinity or a link too slow to ever
// finish a step is refused at parse time, before any work, saying the bounds and why; a
// second run on a checkpoint folder in use is refused, naming the first; and chapters 2,
// 3, 4, 6, 7, 8 and 9, killed with SIGKILL mid-run and resumed, end byte for byte where
// a run that was never killed ends (chapter 1: exact_resume_test.cpp; chapters 5 and 6
// across ranks: chapter5_test.cpp, chapter6_ranks_test.cpp).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "../data/temp_dir.hpp"
#include "cli/options.hpp"
#include "exact_resume.hpp"
#include "flag_error.hpp"
#include "kill_nine.hpp"
#include "model/checkpoint.hpp"
#include "program.hpp"

namespace towers {
namespace {

namespace fs = std::filesystem;
using data::testing::TempDir;
using testing::argv_of;
using testing::bytes_of;
using testing::RefusedFlags;
using testing::run;
using testing::run_and_watch;
using testing::tiny_set;

bool has(const testing::ProgramRun& r, const std::string& text) {
  return r.output.find(text) != std::string::npos;
}

// Parses `--x <text>` into a double checked by `check`; returns CLI11's message ("" if accepted).
std::string parse_error(const CLI::Validator& check, const std::string& text) {
  return testing::flag_error<double>(check, "--x", text);
}

TEST(FiniteNumber, RefusesNanAndInfinityWhichPassEveryRangeCheck) {
  const CLI::Validator check = finite_number(0.1, 86400, " seconds");
  for (const char* bad : {"nan", "NaN", "-nan", "inf", "-inf", "infinity"}) {
    const std::string error = parse_error(check, bad);
    EXPECT_NE(error.find("is not a finite number"), std::string::npos) << bad << ": " << error;
    EXPECT_NE(error.find("[0.1, 86400] seconds"), std::string::npos) << bad << ": " << error;
  }
  EXPECT_NE(parse_error(check, "abc").find("'abc' is not a number"), std::string::npos);
  EXPECT_NE(parse_error(check, "1.5x").find("is not a number"), std::string::npos);
  EXPECT_NE(parse_error(check, "").find("is not a number"), std::string::npos);
  EXPECT_EQ(parse_error(check, "0.1"), "");
  EXPECT_EQ(parse_error(check, "+30"), "");
  EXPECT_EQ(parse_error(check, "86400"), "");
  EXPECT_EQ(parse_error(check, "1e3"), "");
}

TEST(FiniteNumber, StatesItsBoundsReadably) {
  const CLI::Validator check = finite_number(0, 1e6, " (why)");
  for (const char* bad : {"-1", "1e7", "1e999", "-1e999"}) {
    const std::string error = parse_error(check, bad);
    EXPECT_NE(error.find(std::string(bad) + " is not in [0, 1e+06] (why)"), std::string::npos)
        << bad << ": " << error;
  }
  // The widest range still prints short: no 309-digit bound.
  const std::string wide = parse_error(finite_number(-1e308, 1e308), "nan");
  EXPECT_NE(wide.find("[-1e+308, 1e+308]"), std::string::npos) << wide;
}

TEST(FiniteNumber, LinkBoundsSayWhyAndABenchListMayHoldZero) {
  const std::string slow = parse_error(link_gbps(), "1e-9");
  EXPECT_NE(slow.find("is not in [0.1, 100000]"), std::string::npos) << slow;
  EXPECT_NE(slow.find("a step of many towers minutes"), std::string::npos) << slow;
  EXPECT_NE(parse_error(link_gbps(), "0").find("is not in"), std::string::npos);
  EXPECT_EQ(parse_error(link_gbps(), "0.25"), "");
  EXPECT_EQ(parse_error(link_gbps(true), "0"), "");
  EXPECT_EQ(parse_error(link_gbps(true), "0.25"), "");
  EXPECT_NE(parse_error(link_gbps(true), "nan").find("not a finite number"), std::string::npos);
  EXPECT_NE(parse_error(link_gbps(true), "0.01").find("0: unlimited"), std::string::npos);
}

// A bench's list (--links 0,1,nan): every entry is checked, not only the first.
TEST(FiniteNumber, ChecksEveryEntryOfAList) {
  CLI::App app;
  std::vector<double> links;
  app.add_option("--links", links)->delimiter(',')->check(link_gbps(true));
  std::vector<std::string> good{"0,1,0.25", "--links"};
  EXPECT_NO_THROW(app.parse(good));
  EXPECT_EQ(links, (std::vector<double>{0, 1, 0.25}));
  std::vector<std::string> bad{"0,1,nan", "--links"};
  EXPECT_THROW(app.parse(bad), CLI::ValidationError);
}

// Every floating-point flag of the programs, given what the probe gave it: refused with
// exit status 2 and the flag named, before the first step (no "step 0" line).
TEST(FiniteNumber, EveryFloatingPointFlagRefusesNanInfinityAndEndlessLinks) {
  std::vector<RefusedFlags> cases{
      {"00_streams", "--kernel-ms nan", "not a finite number"},
      {"00_streams", "--kernel-ms inf", "not a finite number"},
      {"04_nccl_iterator", "--link-gbps nan", "not a finite number"},
      {"04_nccl_iterator", "--link-gbps 1e-9", "is not in [0.1, 100000]"},
      {"03_stream_towers", "--link-latency-us 1e12", "is not in [0, 100000]"},
      {"03_stream_towers", "--link-latency-us nan", "not a finite number"},
      {"06_overlap", "--bucket-mb nan", "not a finite number"},
      {"06_overlap", "--bucket-mb 1e300", "is not in [0, 1024]"},
      {"09_pipeline", "--kernel-ms nan", "not a finite number"},
      {"09_pipeline", "--backward-ratio nan", "not a finite number"},
      {"09_pipeline", "--backward-ratio inf", "not a finite number"},
  };
#ifdef TOWERS_TEST_RANKS  // 05_ranks needs MPI; started alone it is a job of one rank
  cases.push_back({"05_ranks", "--collective-timeout nan", "not a finite number"});
  cases.push_back({"05_ranks", "--collective-timeout inf", "not a finite number"});
  cases.push_back({"06_overlap_ranks", "--collective-timeout nan", "not a finite number"});
#endif
  for (const RefusedFlags& c : cases) {
    const std::string flag = c.args.substr(0, c.args.find(' '));
    auto r = run(c.program, "--backend host --steps 1 " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.program << " " << c.args << "\n" << r.output;
    EXPECT_TRUE(has(r, flag)) << c.program << " " << c.args << "\n" << r.output;
    EXPECT_TRUE(has(r, c.message)) << c.program << " " << c.args << "\n" << r.output;
    EXPECT_FALSE(has(r, "step 0,")) << c.program << " " << c.args << "\n" << r.output;
  }
}

#ifdef TOWERS_TEST_BENCH
// bench_graph took its counts unchecked: --towers-per-device 0 died of SIGFPE (a division
// by zero) and --towers 0 reported a false correctness failure. Now both are flag errors.
TEST(BenchFlags, GraphBenchRefusesZeroTowersAndZeroTowersPerDevice) {
  for (const char* args : {"--towers-per-device 0", "--towers 0", "--towers 1 0", "--steps 1"}) {
    auto r = run("bench_graph", args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_TRUE(has(r, "is not in [")) << args << "\n" << r.output;
  }
}

// The benches pasted --bin-dir into a shell command: a folder with a space broke them and
// one with a ';' ran what followed it. Now the chapters are started without a shell.
TEST(BenchFlags, BinDirIsAPathNeverShellText) {
  TempDir dir;
  const fs::path bin = dir.path() / "has space;touch pwned;#";
  fs::create_directories(bin);
  for (const char* chapter : {"02_serial_towers", "03_stream_towers", "09_pipeline"}) {
    fs::create_symlink(fs::path(TOWERS_BIN_DIR) / chapter, bin / chapter);
  }
  auto r = run("bench_towers",
               "--backend host --devices 1 --batch-size 2 --steps 2 --repeats 1 --bin-dir '" +
                   bin.string() + "'",
               "cd '" + dir.path().string() + "' && ");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("same_loss"), "yes") << r.output;
  // bench_pipeline pasted it into a popen command too, after the fix of the others.
  auto pipeline = run("bench_pipeline",
                      "--schedules 1f1b --stages 2 --micro-batches 2 --kernel-ms 1 --repeats 1 "
                      "--bin-dir '" + bin.string() + "'",
                      "cd '" + dir.path().string() + "' && ");
  EXPECT_EQ(pipeline.exit_code, 0) << pipeline.output;
  EXPECT_EQ(pipeline.last("wrong_runs"), "0") << pipeline.output;
  EXPECT_FALSE(fs::exists(dir.path() / "pwned")) << "the folder's name ran as a command";
}

// bench_pipeline took --kernel-ms unchecked: NaN ran every case and each failed later
// with "no summary from" (exit status 1), not as the flag mistake it is.
TEST(BenchFlags, PipelineBenchRefusesANonFiniteKernelTime) {
  for (const char* args : {"--kernel-ms nan", "--kernel-ms inf", "--kernel-ms 0", "--repeats 0"}) {
    auto r = run("bench_pipeline", args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_TRUE(has(r, std::string(args).substr(0, std::string(args).find(' ')))) << args << "\n" << r.output;
    EXPECT_FALSE(has(r, "bench_pipeline: chapter 9")) << "ran first: " << args << "\n" << r.output;
  }
}
// bench_train ran its PyTorch twin through a shell: a --python path with a space broke it,
// and one with a ';' ran what followed. Now the Python runs with its arguments as a vector,
// and a --python that cannot run PyTorch is refused before any work, saying what to do.
// The stand-in Python answers `-c "import torch"` and the script's run as torch would, so
// the test needs no torch; it writes each argument it got on a line of its own.
TEST(BenchFlags, TrainBenchRunsPythonWithoutAShell) {
  TempDir dir;
  const fs::path folder = dir.path() / "has space;touch pwned;#";
  fs::create_directories(folder);
  auto stand_in = [&](const std::string& name, bool has_torch) {
    const fs::path path = folder / name;
    std::ofstream(path) << "#!/bin/sh\n"
                        << "printf '%s\\n' \"$@\" >> \"$0.args\"\n"
                        << "if [ \"$1\" = -c ]; then exit " << (has_torch ? 0 : 1) << "; fi\n"
                        << "echo 'summary: framework=pytorch images_per_sec=100.0 "
                           "images_per_sec_best=120.0 version=stand-in'\n";
    fs::permissions(path, fs::perms::owner_all);
    return path;
  };
  const std::string common =
      "--batch-size 2 --warmup 1 --steps 2 --pairs 1 --sgemm-size 0 --threads 1 "
      "--profile-steps 1 --pytorch-script 'a script; echo injected'";
  // Run from the temporary folder, so that an injected `touch pwned` would land there.
  const std::string in_dir = "cd '" + dir.path().string() + "' && ";
  const fs::path torch = stand_in("python with torch", true);
  auto r = run("bench_train", common + " --python '" + torch.string() + "'", in_dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("pytorch"), "measured") << r.output;
  EXPECT_EQ(r.last("pytorch_version"), "stand-in") << r.output;
  std::ifstream args(torch.string() + ".args");
  std::string all((std::istreambuf_iterator<char>(args)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "-c\nimport torch\na script; echo injected\n--threads\n1\n--batch-size\n2\n"
                 "--warmup\n1\n--steps\n2\n");
  EXPECT_FALSE(has(r, "injected\n")) << r.output;

  const fs::path no_torch = stand_in("python without torch", false);
  r = run("bench_train", common + " --python '" + no_torch.string() + "'", in_dir);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r, "`import torch` fails there; install it (")) << r.output;
  EXPECT_TRUE(has(r, "-m pip install torch")) << r.output;
  EXPECT_FALSE(has(r, "# bench_train:")) << "ran first:\n" << r.output;

  r = run("bench_train", common + " --python '" + (folder / "no python").string() + "'", in_dir);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r, "cannot run it (not found, or not executable)")) << r.output;
  EXPECT_FALSE(fs::exists(dir.path() / "pwned")) << "the folder's name ran as a command";
}
// bench_train names the kernels its ceiling was measured with, as the library reports them
// (issue 41): OpenBLAS's choice, here forced by OPENBLAS_CORETYPE, beside the sgemm line
// and in the summary. A tiny run: three steps of 2 images, a 64^3 sgemm.
TEST(BenchFlags, TrainBenchNamesTheOpenblasKernelsOfItsCeiling) {
#if defined(__x86_64__)
  const std::string core = "Haswell";  // every x86-64 OpenBLAS with DYNAMIC_ARCH has it
  const std::string prefix = "OPENBLAS_CORETYPE=" + core + " ";
#else
  const std::string core, prefix;
#endif
  auto r = run("bench_train",
               "--batch-size 2 --warmup 1 --steps 2 --pairs 1 --sgemm-size 64 --threads 1 "
               "--profile-steps 1 --no-pytorch",
               prefix);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.last("openblas_core").empty()) << r.output;
  if (!core.empty()) {
    EXPECT_EQ(r.last("openblas_core"), core) << r.output;
    EXPECT_TRUE(has(r, "# sgemm 64^3, OpenBLAS " + core + " kernels, 1 thread(s)")) << r.output;
  }
}
#endif

// A full disk is a failure during the run, exit status 1 as docs/reliability.md promises,
// not 2 ("a mistake in the command line"): chapter 0 wrote its trace outside the harness.
TEST(ExitStatus, AFullDiskIsStatusOneNotAUsageError) {
  auto r = run("00_streams", "--backend host --devices 2 --kernel-ms 1 --trace /dev/full");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r, "No space left on device")) << r.output;
}

// --- Out of memory ---------------------------------------------------------------------

// std::bad_alloc (the host's allocator gave up: a std::vector, a new) says only
// "std::bad_alloc"; every program's runner turns it into what ran out and what to do,
// exit status 1 (a failure during the run, not a mistake in the command line).
TEST(OutOfMemory, AHostBadAllocSaysWhatRanOutAndWhatToDo) {
  CLI::App app{"test"};
  char name[] = "program";
  char* argv[] = {name, nullptr};
  ::testing::internal::CaptureStderr();
  const int status = run_program(app, 1, argv, []() -> int { throw std::bad_alloc(); });
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(status, 1);
  EXPECT_NE(said.find("error: out of host memory (std::bad_alloc)"), std::string::npos) << said;
  EXPECT_NE(said.find("smaller --batch-size"), std::string::npos) << said;
}

// A thread the system refuses (ulimit -u; std::thread throws std::system_error of EAGAIN)
// said only "Resource temporarily unavailable"; now it says what ran out and what to do.
TEST(OutOfMemory, ARefusedThreadSaysWhatRanOutAndWhatToDo) {
  CLI::App app{"test"};
  char name[] = "program";
  char* argv[] = {name, nullptr};
  ::testing::internal::CaptureStderr();
  const int status = run_program(app, 1, argv, []() -> int {
    throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
  });
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(status, 1);
  EXPECT_NE(said.find("error: out of threads (Resource temporarily unavailable)"),
            std::string::npos) << said;
  EXPECT_NE(said.find("fewer --devices"), std::string::npos) << said;
}

// The same, from a chapter run as an unprivileged user under a limit of 12 processes and
// threads (root is exempt from the limit, so the test needs root to switch user): its 16
// simulated devices' streams cannot all start.
TEST(OutOfMemory, AChapterUnderAThreadLimitSaysToUseFewerDevices) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a program as another user (setpriv)";
  auto r = run("03_stream_towers", "--backend host --devices 16 --batch-size 2 --steps 1",
               "prlimit --nproc=12 setpriv --reuid=65534 --regid=65534 --clear-groups ");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(has(r, "error: Resource temporarily unavailable")) << r.output;
  EXPECT_TRUE(has(r, "fewer --devices")) << r.output;
  EXPECT_FALSE(has(r, "step 0,")) << r.output;
}

// --- Free space in the checkpoint folder -----------------------------------------------

// Runs `commands` (sh) in a private mount namespace where `mount_point` is a fresh tmpfs
// of `kib` KiB (unshare -rm: root of a new user namespace, so no privilege is needed
// where user namespaces are allowed). Returns nullopt when tmpfs cannot be mounted here.
std::optional<base::CommandResult> run_on_small_disk(const fs::path& mount_point, std::uintmax_t kib,
                                                     const std::string& commands) {
  const std::string mount = "mount -t tmpfs -o size=" + std::to_string(kib) + "k tmpfs " +
                            mount_point.string();
  if (base::run_command("unshare -rm sh -c '" + mount + "' 2>&1").exit_code != 0) return std::nullopt;
  return base::run_command("unshare -rm sh -c '" + mount + " && " + commands + "' 2>&1");
}

// A folder whose disk cannot hold one checkpoint is refused before step 0 (exit status 2),
// naming the folder and the bytes needed and free; a fresh 4 MiB disk holds no 8 MiB file.
TEST(FreeSpace, ACheckpointFolderTooSmallForOneCheckpointIsRefusedBeforeStepZero) {
  TempDir dir;
  const fs::path disk = dir.path() / "disk";
  fs::create_directories(disk);
  const auto r = run_on_small_disk(disk, 4096,
      TOWERS_BIN_DIR "/01_single_gpu --backend host --batch-size 4 --steps 3 --checkpoint-dir " +
      (disk / "ck").string() + "; echo exit=$?");
  if (!r) GTEST_SKIP() << "no tmpfs in a user namespace here (unshare -rm)";
  EXPECT_NE(r->output.find("exit=2"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("--checkpoint-dir " + (disk / "ck").string() + " has "), std::string::npos)
      << r->output;
  EXPECT_NE(r->output.find("one checkpoint needs " + std::to_string(model::checkpoint_file_size()) +
                           " bytes"), std::string::npos) << r->output;
  EXPECT_EQ(r->output.find(": step 0,"), std::string::npos) << "trained first\n" << r->output;
}

// A disk that holds one checkpoint but not two: the second save fails mid-run (exit
// status 1, "No space left on device"), and the first checkpoint is left whole and
// loadable, with no temporary file beside it (the save writes a temporary, then renames).
TEST(FreeSpace, ASaveThatFailsMidRunLeavesThePreviousCheckpointWhole) {
  TempDir dir;
  const fs::path disk = dir.path() / "disk", kept = dir.path() / "kept";
  fs::create_directories(disk);
  const std::uintmax_t kib = model::checkpoint_file_size() * 3 / 2 / 1024;
  const auto r = run_on_small_disk(disk, kib,
      TOWERS_BIN_DIR "/01_single_gpu --backend host --batch-size 4 --steps 3 --log-every 1 "
      "--checkpoint-every 1 --checkpoint-dir " + (disk / "ck").string() + "; echo exit=$?; cp -r " +
      (disk / "ck").string() + " " + kept.string());
  if (!r) GTEST_SKIP() << "no tmpfs in a user namespace here (unshare -rm)";
  EXPECT_NE(r->output.find("exit=1"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("No space left on device"), std::string::npos) << r->output;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kept)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"model.ckpt-1", "towers.lock"})) << r->output;
  const model::TrainingState first = model::load_checkpoint(kept / "model.ckpt-1");
  EXPECT_EQ(first.global_step, 1);
}

// --- The checkpoint folder's lock ------------------------------------------------------

// Two runs given one --checkpoint-dir: the second refuses before its first step, naming
// the first's PID and program; after the first is killed (no handler runs) the kernel has
// dropped its lock and a run resumes from that folder.
TEST(CheckpointLock, ASecondRunOnAFolderInUseIsRefusedNamingTheFirst) {
  TempDir dir;
  const std::string flags = tiny_set(dir.path());
  const fs::path ckpt = dir.path() / "ckpt";
  testing::ProgramRun second;
  auto first = run_and_watch(
      argv_of("03_stream_towers", flags + "--steps 100000 --checkpoint-every 1 --checkpoint-dir " +
                                      ckpt.string()),
      "step 1,", [&](pid_t pid) {
        second = run("03_stream_towers", flags + "--steps 1 --resume-if-present --checkpoint-dir " +
                                             ckpt.string());
        ::kill(pid, SIGKILL);
        EXPECT_NE(second.output.find("is in use by another run (PID " + std::to_string(pid) +
                                     ", 03_stream_towers)"),
                  std::string::npos) << second.output;
      });
  EXPECT_EQ(first.exit_code, -1) << "the first run was to be killed:\n" << first.output;
  EXPECT_EQ(second.exit_code, 2) << second.output;
  EXPECT_EQ(second.output.find("step 0,"), std::string::npos) << second.output;
  auto after = run("03_stream_towers", flags + "--steps 1 --resume --checkpoint-dir " + ckpt.string());
  EXPECT_EQ(after.exit_code, 0) << after.output;
  EXPECT_NE(after.output.find("resumed from"), std::string::npos) << after.output;
}

// --- Kill -9 and resume, chapters 2, 3, 4, 6, 7, 8, 9 and 10 ------------------------------

// What differs between the chapters' kill tests.
struct KillCase {
  std::string extra;                     // flags of this chapter, after the tiny set's
  std::string loss_key = "final_loss";   // the summary key of the last step's loss
  bool log_every = true;                 // takes --log-every (chapter 9 logs every step)
};

// Runs `program` on the tiny set (an epoch of 3 steps) with its flags: 10 steps straight
// against 10 killed after step 3 and resumed, byte for byte (kill_nine.hpp).
void expect_kill_and_exact_resume(const std::string& program, const KillCase& how = {}) {
  TempDir dir;
  std::string flags = tiny_set(dir.path()) + how.extra + " ";
  if (!how.log_every) flags.erase(flags.find("--log-every 1 "), 14);
  testing::KillNineJob job = testing::one_process(program);
  job.loss_key = how.loss_key;
  testing::expect_kill_nine_and_exact_resume(dir.path(), flags, job);
}

// Chapters 2 and 3 read one global batch a step (InputQueue): the checkpoint's input
// position restores the queue, mid-epoch.
TEST(KillAndResume, Chapter2sSerialTowersContinueByteForByte) {
  expect_kill_and_exact_resume("02_serial_towers");
}

TEST(KillAndResume, Chapter3sStreamTowersContinueByteForByte) {
  expect_kill_and_exact_resume("03_stream_towers");
}

TEST(KillAndResume, Chapter4sIteratorsContinueByteForByte) {
  expect_kill_and_exact_resume("04_nccl_iterator");
}

TEST(KillAndResume, Chapter4sQueueInputContinuesByteForByte) {
  expect_kill_and_exact_resume("04_nccl_iterator", {.extra = "--input queue"});
}

TEST(KillAndResume, Chapter6ContinuesByteForByte) {
  expect_kill_and_exact_resume("06_overlap", {.extra = "--bucket-mb 1"});
}

TEST(KillAndResume, Chapter7ContinuesByteForByte) { expect_kill_and_exact_resume("07_graph"); }

// ZeRO-1: each tower keeps half the moving averages. The checkpoint holds them put together
// and the resumed run gives each tower its shard back: the bytes of a run never stopped.
TEST(KillAndResume, Chapter8sShardedAveragesContinueByteForByte) {
  expect_kill_and_exact_resume("08_sharded", {.extra = "--zero 1"});
}

// The real model in two stages of 1F1B, batch 4 in 2 micro-batches: each stage saves its
// own layers' range of the parameters and moving averages into one checkpoint, and the
// resumed stages take their ranges back. An epoch of the tiny set is 7 batches of 4.
TEST(KillAndResume, Chapter9sStagesContinueByteForByte) {
  expect_kill_and_exact_resume("09_pipeline",
                               {.extra = "--model cifar --stages 2 --micro-batches 2",
                                .loss_key = "final_cross_entropy",
                                .log_every = false});
}

// Tensor parallel: two ranks share each batch of 4, each keeping its columns of local3
// and rows of local4; the checkpoint holds the slices put together (chapter 1's layout),
// and the resumed ranks take their slices back. The hybrid: two towers of 4, the slices
// over all 8 images. An epoch of the tiny set is 7 batches of 4, or 3 of 8.
TEST(KillAndResume, Chapter10sTensorRanksContinueByteForByte) {
  expect_kill_and_exact_resume("10_tensor");
}

TEST(KillAndResume, Chapter10sHybridContinuesByteForByte) {
  expect_kill_and_exact_resume("10_tensor", {.extra = "--hybrid"});
}

// The iterators and the queue record the input's position in the same terms, so a
// checkpoint of one resumes the other; one of another --seed is refused by flag.
TEST(KillAndResume, AnIteratorCheckpointResumesWithTheQueueAndRefusesAnotherSeed) {
  TempDir dir;
  const std::string flags = tiny_set(dir.path());
  const fs::path ckpt = dir.path() / "ckpt";
  ASSERT_EQ(run("04_nccl_iterator", flags + "--steps 4 --checkpoint-dir " + ckpt.string()).exit_code, 0);
  auto r = run("04_nccl_iterator", flags + "--input queue --steps 2 --resume --checkpoint-dir " +
                                       ckpt.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("global_step"), "6") << r.output;
  auto refused = run("04_nccl_iterator", flags + "--steps 1 --resume --seed 9 --checkpoint-dir " +
                                             ckpt.string());
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("Resume with the same --seed"), std::string::npos) << refused.output;
}

// --- Inputs and outputs are what they seem -----------------------------------------------

// A named pipe in place of a data file blocked the read before the first step, forever.
// Now it is refused by name (the run is killed after 60 s if it hangs, failing the test).
TEST(DataFiles, ANamedPipeInPlaceOfADataFileIsRefusedNotWaitedOn) {
  TempDir dir;
  const std::string flags = tiny_set(dir.path());
  const fs::path pipe = dir.path() / "data_batch_3.bin";
  fs::remove(pipe);
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  auto r = run_and_watch(argv_of("03_stream_towers", flags + "--steps 1"), "step 0,",
                         [](pid_t) {}, /*timeout_s=*/60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(pipe.string() + " is not a regular file (a named pipe"),
            std::string::npos) << r.output;
}

// --trace, --save-params and --save-graph wrote through a symbolic link onto its target,
// and a dangling one passed the up-front check and lost the trace after training. Both are refused at
// parse time now, and the link's target is left as it was.
TEST(OutputPaths, ASymbolicLinkIsRefusedNotWrittenThrough) {
  TempDir dir;
  const fs::path target = dir.path() / "precious.txt", link = dir.path() / "out.json",
                 dangling = dir.path() / "gone.json";
  { std::ofstream(target) << "keep me"; }
  fs::create_symlink(target, link);
  fs::create_symlink(dir.path() / "no-such-file", dangling);
  for (const std::string& args : {"--trace " + link.string(), "--save-params " + link.string(),
                                  "--trace-svg " + dangling.string()}) {
    auto r = run("03_stream_towers", "--backend host --steps 1 " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_TRUE(has(r, "is a symbolic link (to ")) << args << "\n" << r.output;
    EXPECT_FALSE(has(r, "step 0,")) << args << "\n" << r.output;
  }
  // Chapter 7's --save-graph, written after training, is checked the same way.
  for (const fs::path& path : {link, dangling}) {
    auto r = run("07_graph", "--backend host --steps 1 --save-graph " + path.string());
    EXPECT_EQ(r.exit_code, 2) << path << "\n" << r.output;
    EXPECT_TRUE(has(r, "is a symbolic link (to ")) << path << "\n" << r.output;
    EXPECT_FALSE(has(r, "step 0,")) << path << "\n" << r.output;
  }
  EXPECT_TRUE(has(run("03_stream_towers", "--backend host --steps 1 --trace " + dangling.string()),
                  "whose target does not exist"));
  EXPECT_EQ(bytes_of(target), "keep me");
}

// A save wrote a new file and renamed it over the old one, and so replaced a device or a
// pipe given as --save-params with a regular file: run as root, `--save-params /dev/full`
// left /dev/full a 4 MB regular file for every program on the machine. A device or a pipe
// is written in place now. A FIFO (safe to test, unlike /dev/null): it stays a FIFO, and
// this test, reading it while the chapter runs, receives the whole saved file.
TEST(OutputPaths, ASaveWritesIntoAPipeNeverReplacesIt) {
  TempDir dir;
  const fs::path fifo = dir.path() / "params.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opened for reading first, without blocking, so that the chapter's open for writing
  // does not wait; read until the chapter has ended (a replaced FIFO is never written).
  const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::atomic<bool> ended = false;
  testing::ProgramRun r;
  std::thread chapter([&] {
    r = run("03_stream_towers", "--backend host --batch-size 2 --steps 1 --save-params " +
                                    fifo.string());
    ended = true;
  });
  std::string received;
  char chunk[65536];
  for (bool last = false; !last;) {
    last = ended;  // one more read after the chapter ended: what it wrote last
    for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) > 0;) received.append(chunk, n);
    if (!last) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  chapter.join();
  ::close(fd);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  struct stat after {};
  ASSERT_EQ(::lstat(fifo.c_str(), &after), 0);
  EXPECT_TRUE(S_ISFIFO(after.st_mode)) << fifo << " was replaced";
  ASSERT_FALSE(received.empty()) << "nothing came through the FIFO\n" << r.output;
  EXPECT_EQ(model::parse_checkpoint(received, fifo).global_step, 1);
}

}  // namespace
}  // namespace towers

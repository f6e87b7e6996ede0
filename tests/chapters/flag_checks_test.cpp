// SPDX-License-Identifier: MIT
// Flag checks (issue 38): every number a program takes is checked as it is parsed. CLI11
// reads an empty value as 0 for a number without a check, so `08_sharded --zero ''` (an
// unset shell variable) ran ZeRO-0 without a word; the checks' messages read as sentences
// ("[1, 64] stages", not "[1, 64]stages"); and bench_pipeline says which shapes it cannot
// run instead of printing an empty table.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "flag_error.hpp"
#include "program.hpp"

namespace towers {
namespace {

using testing::RefusedFlags;
using testing::run;

bool has(const testing::ProgramRun& r, const std::string& text) {
  return r.output.find(text) != std::string::npos;
}

// The programs this build made: the chapters always, the ranks' with MPI, the benches
// unless a preset leaves them out.
std::vector<std::string> programs() {
  std::vector<std::string> names{"00_streams",    "01_single_gpu", "02_serial_towers",
                                 "03_stream_towers", "04_nccl_iterator", "06_overlap",
                                 "07_graph",      "08_sharded",    "09_pipeline",
                                 "11_mesh"};
#ifdef TOWERS_TEST_RANKS
  names.insert(names.end(), {"05_ranks", "06_overlap_ranks"});
#endif
#ifdef TOWERS_TEST_BENCH
  names.insert(names.end(), {"bench_allreduce", "bench_graph", "bench_host_ops", "bench_input",
                             "bench_overlap", "bench_pipeline", "bench_sharded", "bench_towers",
                             "bench_train"});
#ifdef TOWERS_TEST_RANKS
  names.push_back("bench_allreduce_mpi");
#endif
#endif
  return names;
}

// CLI11's --help writes a number flag as "--name INT" and, when it has a check, the check
// after a colon: "--steps INT:INT in [0, 100000000]=30". A number flag with nothing after
// its type but a default ("--zero INT=1") takes any number, and '' as 0.
TEST(FlagChecks, EveryNumberFlagOfEveryProgramIsChecked) {
  const std::regex unchecked(R"(^  (?:-\w,)?(--[\w-]+) (?:INT|UINT|FLOAT)(?:=|\s|$))");
  for (const std::string& program : programs()) {
    auto help = run(program, "--help");
    ASSERT_EQ(help.exit_code, 0) << program << help.output;
    std::istringstream lines(help.output);
    for (std::string line; std::getline(lines, line);) {
      std::smatch match;
      EXPECT_FALSE(std::regex_search(line, match, unchecked))
          << program << " " << match[1] << " takes a number without a check: " << line;
    }
  }
}

// What the probe gave: an empty value, and numbers the old flags took without a check.
TEST(FlagChecks, AnEmptyNumberIsRefusedNotReadAsZero) {
  std::vector<RefusedFlags> cases{
      {"08_sharded", "--zero ''", "--zero: '' is not a whole number"},
      {"08_sharded", "--zero 4", "--zero: 4 is not in [0, 3] (not a ZeRO stage; use 0: no sharding"},
      {"09_pipeline", "--model cifar --seed -1", "--seed: '-1' is not a whole number"},
  };
#ifdef TOWERS_TEST_RANKS
  cases.push_back({"05_ranks", "--fail-rank ''", "--fail-rank: '' is not a whole number"});
  cases.push_back({"06_overlap_ranks", "--fail-rank -2", "--fail-rank: -2 is not in [0, "});
  cases.push_back({"05_ranks", "--fail-at-step ''", "--fail-at-step: '' is not a whole number"});
  // A flag whose own parser refuses it: exit status 1 in the ranks' programs, 2 elsewhere.
  cases.push_back({"05_ranks", "--backend cdua", "error: unknown backend 'cdua'"});
  cases.push_back({"06_overlap_ranks", "--backend ''", "error: unknown backend ''"});
#endif
#ifdef TOWERS_TEST_BENCH
  cases.push_back({"bench_sharded", "--zero ''", "--zero: '' is not a whole number"});
  cases.push_back({"bench_sharded", "--optimizers sgx", "--optimizers: sgx not in"});
  cases.push_back({"bench_train", "--sgemm-size ''", "--sgemm-size: '' is not a whole number"});
  cases.push_back({"bench_pipeline", "--virtual ''", "--virtual: '' is not a whole number"});
  cases.push_back({"bench_pipeline", "--schedules 1f1b,gpip", "--schedules: gpip not in"});
  cases.push_back({"bench_towers", "--devices ''", "--devices: '' is not a whole number"});
  cases.push_back({"bench_allreduce", "--towers ''", "--towers: '' is not a whole number"});
#endif
  for (const RefusedFlags& c : cases) {
    auto r = run(c.program, c.args);
    EXPECT_EQ(r.exit_code, 2) << c.program << " " << c.args << "\n" << r.output;
    EXPECT_TRUE(has(r, c.message)) << c.program << " " << c.args << "\n" << r.output;
    EXPECT_FALSE(has(r, "summary:")) << c.program << " " << c.args << " ran:\n" << r.output;
  }
}

// Parses `--n <text>` into an int checked by `check`; returns CLI11's message ("" if accepted).
std::string whole_number_error(const CLI::Validator& check, const std::string& text) {
  return testing::flag_error<int>(check, "--n", text);
}

TEST(FlagChecks, AUnitOrReasonIsSetApartFromTheRange) {
  EXPECT_EQ(whole_number_error(whole_number(1, 64, "stages"), "100"),
            "--n: 100 is not in [1, 64] stages");
  EXPECT_EQ(whole_number_error(whole_number(1, 64, " stages"), "100"),
            "--n: 100 is not in [1, 64] stages");
  EXPECT_EQ(whole_number_error(whole_number(1, 64), "100"), "--n: 100 is not in [1, 64]");
  EXPECT_EQ(whole_number_error(whole_number(1, 64, "stages"), ""), "--n: '' is not a whole number");
  // As a learner meets it: chapter 9's stage count.
  auto r = run("09_pipeline", "--stages 100");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r, "--stages: 100 is not in [1, 64] stages")) << r.output;
}

#ifdef TOWERS_TEST_BENCH
// Interleaved runs only where the stage count divides the micro-batch count: the bench
// dropped every other shape without a word, and with none left printed an empty table and
// exited 0. Now the shapes left out are listed, and no shape at all is a usage error.
TEST(FlagChecks, PipelineBenchSaysWhichShapesItCannotRun) {
  auto none = run("bench_pipeline", "--schedules interleaved --stages 4 --micro-batches 6 --repeats 1");
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_TRUE(has(none, "no case to run")) << none.output;
  EXPECT_TRUE(has(none, "p=4: m=6")) << none.output;
  EXPECT_TRUE(has(none, "--micro-batches 8")) << none.output;
  EXPECT_FALSE(has(none, "# schedule")) << "printed a table:\n" << none.output;

  auto some = run("bench_pipeline",
                  "--schedules interleaved --stages 2 --micro-batches 3,4 --kernel-ms 0.5 --repeats 1");
  EXPECT_EQ(some.exit_code, 0) << some.output;
  EXPECT_TRUE(has(some, "# skipped: interleaved where m is not a multiple of p (p=2: m=3)"))
      << some.output;
  EXPECT_EQ(some.last("micro_batches"), "4") << some.output;
}
#endif

}  // namespace
}  // namespace towers

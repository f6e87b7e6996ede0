// SPDX-License-Identifier: MIT
#include "base/process.hpp"

#include <gtest/gtest.h>

#include <string>

namespace towers::base {
namespace {

TEST(RunCommand, KeepsTheOutputAndTheExitStatus) {
  const CommandResult r = run_command("printf 'one\\ntwo\\n'; exit 3");
  EXPECT_EQ(r.output, "one\ntwo\n");
  EXPECT_EQ(r.exit_code, 3);
}

TEST(RunCommand, EchoSeesEveryPieceInOrder) {
  std::string echoed;
  const CommandResult r =
      run_command("echo a; echo b 1>&2", [&](std::string_view piece) { echoed += piece; });
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(echoed, "a\n");  // stderr is not read unless the command redirects it
  EXPECT_EQ(r.output, echoed);
}

TEST(RunCommand, AKilledCommandHasNoExitCode) {
  EXPECT_EQ(run_command("kill -9 $$").exit_code, -1);
}

// No shell: an argument with a space, a ';' or a '$' arrives as it is, one word.
TEST(RunArgv, PassesEachArgumentAsItIsWithoutAShell) {
  const CommandResult r = run_argv({"/bin/sh", "-c", "printf '%s|' \"$@\"; echo err 1>&2; exit 4",
                                    "sh", "a b", "c;touch x", "$HOME"});
  EXPECT_EQ(r.output, "a b|c;touch x|$HOME|err\n");  // stderr too
  EXPECT_EQ(r.exit_code, 4);
}

TEST(RunArgv, AProgramThatCannotStartExitsWith127) {
  EXPECT_EQ(run_argv({"/no/such/program"}).exit_code, 127);
  EXPECT_EQ(run_argv({"no-such-program-in-path"}).exit_code, 127);
  EXPECT_EQ(run_argv({}).exit_code, -1);
}

// A bare name is found in PATH, as `python3` must be; the echo sees what the output holds.
TEST(RunArgv, FindsABareNameInPathAndEchoesTheOutput) {
  std::string echoed;
  const CommandResult r =
      run_argv({"sh", "-c", "echo out; echo err 1>&2"}, [&](std::string_view p) { echoed += p; });
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "out\nerr\n");
  EXPECT_EQ(echoed, r.output);
}

}  // namespace
}  // namespace towers::base

// SPDX-License-Identifier: MIT
// Grader of exercise 02: average_gradients() on the host. Each test is one point.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "average_gradients.hpp"
#include "exercises/grader.hpp"

namespace towers::exercises {
namespace {

// The variables of a small model: sizes include 0 (a variable with no elements), 1,
// odd sizes and one larger than a cache line.
struct Variable {
  std::string name;
  std::size_t size;
};
const std::vector<Variable> kVariables = {
    {"conv1/weights", 75}, {"conv1/biases", 1},  {"empty", 0},
    {"local3/weights", 1001}, {"softmax_linear/biases", 10}};

// Tower t's gradients for kVariables, from per-variable exact-mean data.
struct ModelGrads {
  std::vector<TowerGrads> towers;          // [towers][variables]
  std::vector<std::vector<float>> means;   // [variables][size]
};

ModelGrads make_model_grads(int towers, std::uint64_t seed) {
  ModelGrads grads;
  grads.towers.resize(towers);
  for (std::size_t v = 0; v < kVariables.size(); ++v) {
    ExactMeanData data = make_exact_mean_data(towers, kVariables[v].size, seed + v);
    for (int t = 0; t < towers; ++t) grads.towers[t].push_back({data.towers[t], kVariables[v].name});
    grads.means.push_back(data.mean);
  }
  return grads;
}

class AverageOfNTowers : public ::testing::TestWithParam<int> {};

TEST_P(AverageOfNTowers, IsTheExactMeanOfEveryVariable) {
  const int towers = GetParam();
  ModelGrads grads = make_model_grads(towers, 42);
  std::vector<GradAndVar> average = average_gradients(grads.towers);
  ASSERT_EQ(average.size(), kVariables.size())
      << "expected one averaged pair per variable (" << kVariables.size() << "), got "
      << average.size() << "; hint: push one GradAndVar per variable of tower 0";
  for (std::size_t v = 0; v < kVariables.size(); ++v) {
    auto bad = first_mismatch(average[v].grad, grads.means[v]);
    EXPECT_FALSE(bad) << "expected the exact mean of " << towers << " towers for variable "
                      << kVariables[v].name << ", got "
                      << (bad ? describe_mismatch(average[v].grad, grads.means[v], *bad) : "")
                      << "; hint: sum every tower's gradient element in a float, then divide "
                         "by the number of towers (the inputs are fractions like 2.375, exact "
                         "in float: an int accumulator or an integer division truncates them)";
  }
}

INSTANTIATE_TEST_SUITE_P(Towers, AverageOfNTowers, ::testing::Range(1, 9),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

TEST(AverageGradients, KeepsTheVariablesNamesAndOrder) {
  ModelGrads grads = make_model_grads(3, 7);
  std::vector<GradAndVar> average = average_gradients(grads.towers);
  ASSERT_EQ(average.size(), kVariables.size())
      << "expected " << kVariables.size() << " pairs, got " << average.size()
      << "; hint: one GradAndVar per variable";
  for (std::size_t v = 0; v < kVariables.size(); ++v) {
    EXPECT_EQ(average[v].var, kVariables[v].name)
        << "expected pair " << v << " to name variable " << kVariables[v].name << ", got '"
        << average[v].var << "'; hint: keep tower 0's order and pair each mean with its var";
  }
}

TEST(AverageGradients, ModelWithNoVariablesGivesAnEmptyList) {
  std::vector<TowerGrads> towers(4);  // four towers, each with no variables
  std::vector<GradAndVar> average = average_gradients(towers);
  EXPECT_TRUE(average.empty()) << "expected no pairs for a model without variables, got "
                               << average.size() << "; hint: loop over tower 0's variables";
}

TEST(AverageGradients, LeavesTheTowersGradientsUnchanged) {
  ModelGrads grads = make_model_grads(5, 9);
  const std::vector<TowerGrads> before = grads.towers;
  std::vector<GradAndVar> average = average_gradients(grads.towers);
  EXPECT_EQ(average.size(), kVariables.size())
      << "expected " << kVariables.size() << " pairs, got " << average.size()
      << "; hint: one GradAndVar per variable";
  for (std::size_t t = 0; t < before.size(); ++t) {
    for (std::size_t v = 0; v < kVariables.size(); ++v) {
      auto bad = first_mismatch(grads.towers[t][v].grad, before[t][v].grad);
      EXPECT_FALSE(bad) << "expected tower " << t << "'s gradient of " << kVariables[v].name
                        << " unchanged, got "
                        << (bad ? describe_mismatch(grads.towers[t][v].grad, before[t][v].grad, *bad) : "")
                        << "; hint: sum into a new vector, not into tower 0's";
    }
  }
}

TEST(AverageGradients, RejectsAnEmptyListOfTowers) {
  // Called in a child process: code that reads tower_grads[0] of no towers crashes, and the
  // crash is then this test's failure line (with its hint), not the end of the grader. The
  // child's exit status says what happened; _Exit skips exit handlers (a leak check).
  enum Outcome { kInvalidArgument = 10, kOtherException, kReturned, kUnfinished };
  const pid_t child = fork();
  ASSERT_GE(child, 0) << "fork failed";
  if (child == 0) {
    int outcome = kReturned;
    try {
      average_gradients({});
    } catch (const std::invalid_argument&) {
      outcome = kInvalidArgument;
    } catch (const NotImplemented&) {
      outcome = kUnfinished;
    } catch (...) {
      outcome = kOtherException;
    }
    std::_Exit(outcome);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child) << "waitpid failed";
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == kInvalidArgument) return;
  const std::string expected = "expected std::invalid_argument for an empty list of towers, got ";
  if (code == kOtherException) {
    ADD_FAILURE() << expected << "another exception type; hint: throw std::invalid_argument "
                  << "(a wrong argument), the type the interface promises and callers catch";
  } else if (code == kReturned) {
    ADD_FAILURE() << expected << "a normal return; hint: there is nothing to average: throw "
                  << "std::invalid_argument when tower_grads is empty";
  } else if (code == kUnfinished) {
    ADD_FAILURE() << expected << "an unfinished TODO; hint: finish average_gradients()";
  } else {
    ADD_FAILURE() << expected << "a crash ("
                  << (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                          : "exit status " + std::to_string(code))
                  << "); hint: check tower_grads.empty() before anything reads "
                  << "tower_grads[0], and throw std::invalid_argument";
  }
}

TEST(AverageGradients, RejectsTowersThatDisagreeOnTheVariables) {
  // Four towers, and the odd one out is never tower 1 alone: every tower is compared with
  // tower 0, not only the first pair or neighbours that agree with each other.
  ModelGrads grads = make_model_grads(4, 3);
  auto fewer = grads.towers;
  fewer[3].pop_back();
  expect_invalid_argument([&] { average_gradients(fewer); },
                          "tower 3 (of 4) with one variable fewer than tower 0",
                          "compare every tower's number of variables with tower 0's, up to "
                          "the last tower");
  auto more = grads.towers;
  more[2].push_back({{1.0f}, "extra"});
  expect_invalid_argument([&] { average_gradients(more); },
                          "tower 2 (of 4) with one variable more than tower 0",
                          "compare every tower's number of variables with tower 0's (more "
                          "is as wrong as fewer)");
  auto renamed = grads.towers;
  renamed[2][4].var = "softmax_linear/weights";
  expect_invalid_argument([&] { average_gradients(renamed); },
                          "tower 2 (of 4) whose last variable has another name",
                          "compare every variable's name with tower 0's, on every tower");
  auto renamed_pair = grads.towers;  // towers 2 and 3 agree with each other, not with 0
  renamed_pair[2][0].var = renamed_pair[3][0].var = "conv2/weights";
  expect_invalid_argument([&] { average_gradients(renamed_pair); },
                          "towers 2 and 3 (of 4) whose first variable has another name",
                          "compare with tower 0, not with the tower before");
  // The short gradient is a buffer of exactly its size (pop_back would keep the capacity):
  // a read one past its end is then outside the allocation, where AddressSanitizer sees it.
  auto shorter = grads.towers;
  const std::vector<float>& full = grads.towers[3][3].grad;
  shorter[3][3].grad = std::vector<float>(full.begin(), full.end() - 1);
  expect_invalid_argument([&] { average_gradients(shorter); },
                          "tower 3 (of 4) whose local3/weights gradient is one element short",
                          "compare every gradient's size with tower 0's");
  auto longer = grads.towers;
  longer[1][2].grad.push_back(1.0f);
  expect_invalid_argument([&] { average_gradients(longer); },
                          "tower 1 (of 4) whose empty variable has one element",
                          "compare every gradient's size with tower 0's, also of empty ones");
}

TEST(AverageGradients, AveragesTheSameTowersTheSameWayTwice) {
  // The function keeps no state between calls: a second call on other data is exact too.
  // (When the first call is already wrong, the cause is the mean itself, not state.)
  ModelGrads first = make_model_grads(3, 21), second = make_model_grads(6, 22);
  const std::vector<GradAndVar> first_average = average_gradients(first.towers);
  const bool first_exact = first_average.size() == kVariables.size() &&
                           !first_mismatch(first_average[0].grad, first.means[0]);
  const std::string hint = first_exact ? "start each call's sums from zero, in a local result "
                                         "(no static state)"
                                       : "the first call was wrong already: sum in a float, "
                                         "then divide by the number of towers";
  std::vector<GradAndVar> average = average_gradients(second.towers);
  ASSERT_EQ(average.size(), kVariables.size())
      << "expected " << kVariables.size() << " pairs on the second call, got " << average.size()
      << "; hint: " << hint;
  for (std::size_t v = 0; v < kVariables.size(); ++v) {
    auto bad = first_mismatch(average[v].grad, second.means[v]);
    EXPECT_FALSE(bad) << "expected the exact mean of 6 towers on a second call for "
                      << kVariables[v].name << ", got "
                      << (bad ? describe_mismatch(average[v].grad, second.means[v], *bad) : "")
                      << "; hint: " << hint;
  }
}

}  // namespace
}  // namespace towers::exercises

// SPDX-License-Identifier: MIT
// Grader of exercise 02: average_gradients() on the host. Each test is one point.
#include <gtest/gtest.h>

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
                      << "; hint: sum every tower's gradient element, then divide by the "
                         "number of towers (the inputs are small integers: no rounding)";
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
  expect_invalid_argument([] { average_gradients({}); }, "an empty list of towers",
                          "there is nothing to average: throw std::invalid_argument");
}

TEST(AverageGradients, RejectsTowersThatDisagreeOnTheVariables) {
  ModelGrads grads = make_model_grads(2, 3);
  auto fewer = grads.towers;
  fewer[1].pop_back();
  expect_invalid_argument([&] { average_gradients(fewer); },
                          "tower 1 with one variable fewer than tower 0",
                          "compare every tower's number of variables with tower 0's");
  auto renamed = grads.towers;
  renamed[1][0].var = "conv2/weights";
  expect_invalid_argument([&] { average_gradients(renamed); },
                          "tower 1 whose first variable has another name",
                          "compare every variable's name with tower 0's");
  auto shorter = grads.towers;
  shorter[1][3].grad.pop_back();
  expect_invalid_argument([&] { average_gradients(shorter); },
                          "tower 1 whose local3/weights gradient is one element short",
                          "compare every gradient's size with tower 0's");
}

}  // namespace
}  // namespace towers::exercises

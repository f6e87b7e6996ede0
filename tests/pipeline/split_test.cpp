// SPDX-License-Identifier: MIT
// Where chapter 9 cuts the CIFAR-10 model (src/parallel/pipeline_split): the default split
// makes the slowest stage as light as the layers allow, --split is parsed or refused with
// a reason, and a stage's variables are one range of the flat buffer covering its layers.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model/network.hpp"
#include "model/parameters.hpp"
#include "parallel/pipeline_split.hpp"

namespace towers {
namespace {

double stage_cost(const StageLayers& stage) {
  double cost = 0;
  for (int layer = stage.first; layer <= stage.last; ++layer) cost += layer_cost(layer);
  return cost;
}

double slowest(const std::vector<StageLayers>& split) {
  double most = 0;
  for (const auto& stage : split) most = std::max(most, stage_cost(stage));
  return most;
}

TEST(PipelineSplit, DefaultSplitCoversEveryLayerOnceAndIsNoSlowerThanAnyOther) {
  for (int p = 1; p <= model::kLayerCount; ++p) {
    const auto split = default_split(p);
    ASSERT_EQ(static_cast<int>(split.size()), p);
    EXPECT_EQ(split.front().first, 0);
    EXPECT_EQ(split.back().last, model::kLayerCount - 1);
    for (int s = 1; s < p; ++s) EXPECT_EQ(split[s].first, split[s - 1].last + 1) << "p=" << p;
    // Against every single-cut move of the default: none makes the slowest stage lighter.
    for (int s = 1; s < p; ++s) {
      for (int shift : {-1, 1}) {
        std::vector<StageLayers> moved = split;
        moved[s].first += shift;
        moved[s - 1].last += shift;
        if (moved[s].first > moved[s].last || moved[s - 1].first > moved[s - 1].last) continue;
        EXPECT_LE(slowest(split), slowest(moved)) << "p=" << p << " cut " << s << " by " << shift;
      }
    }
  }
  // conv2 dominates: two stages cut right before it.
  EXPECT_EQ(split_flag(default_split(2)), "conv2");
}

TEST(PipelineSplit, ParsesLayerNamesInForwardOrderAndRefusesTheRest) {
  std::string problem;
  const auto split = parse_split("conv2,norm2,local3", 4, problem);
  ASSERT_EQ(split.size(), 4u) << problem;
  EXPECT_EQ(stage_name(split[0]), "conv1-norm1");
  EXPECT_EQ(stage_name(split[1]), "conv2");
  EXPECT_EQ(stage_name(split[2]), "norm2-pool2");
  EXPECT_EQ(stage_name(split[3]), "local3-softmax_linear");
  EXPECT_EQ(split_flag(split), "conv2,norm2,local3");
  for (const auto& [text, stages] : std::vector<std::pair<std::string, int>>{{"conv3", 2},
                                                                             {"conv1", 2},
                                                                             {"conv2", 3},
                                                                             {"local3,conv2", 3},
                                                                             {"conv2,conv2", 3},
                                                                             {"", 2}}) {
    problem.clear();
    EXPECT_TRUE(parse_split(text, stages, problem).empty()) << text;
    EXPECT_FALSE(problem.empty()) << text;
  }
}

TEST(PipelineSplit, AStagesVariablesAreTheRangeOfItsLayers) {
  EXPECT_EQ(stage_parameters({model::kPool1, model::kNorm1}).count, 0u);  // no variables
  const ParameterRange conv2 = stage_parameters({model::kConv2, model::kConv2});
  EXPECT_EQ(conv2.offset, model::parameter("conv2/weights").offset);
  EXPECT_EQ(conv2.count,
            model::parameter("conv2/weights").count + model::parameter("conv2/biases").count);
  // Stages of any split tile the whole buffer.
  std::size_t next = 0;
  for (const auto& stage : default_split(4)) {
    const ParameterRange range = stage_parameters(stage);
    if (range.count == 0) continue;
    EXPECT_EQ(range.offset, next);
    next = range.offset + range.count;
  }
  EXPECT_EQ(next, model::kNumParameters);
}

}  // namespace
}  // namespace towers

// SPDX-License-Identifier: MIT
// Where chapter 9 cuts the CIFAR-10 model into pipeline stages.
//
// The cuts fall between the model's nine layers (model::Layer: conv1 pool1 norm1 conv2
// norm2 pool2 local3 local4 softmax_linear); the loss stays with softmax_linear. A stage is
// a run of consecutive layers, so its variables are one range of the flat parameter
// buffer (parameters.hpp keeps them in layer order) and it sends one activation forward
// and one gradient back per micro-batch.
//
// The work is far from even: conv2's products are about 80% of the model's, so no split
// into more than two stages is balanced and the stage holding conv2 sets the pace. The
// default split makes that slowest stage as light as the layers allow (below).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace towers {

/// One stage's layers, first..last inclusive (model::Layer values).
struct StageLayers {
  int first = 0;  ///< the stage's first layer
  int last = 0;   ///< its last layer (inclusive)
};

/// The range of the flat parameter buffer a stage's layers own (count 0: no variables).
struct ParameterRange {
  std::size_t offset = 0;  ///< index of the range's first float in the flat buffer
  std::size_t count = 0;   ///< floats in the range
};

/// The estimated cost of a layer for one image, forward and backward: the multiply-adds
/// of its products (Network::multiply_adds_per_image counts the same) plus its output's
/// floats, for the elementwise layers (pooling, LRN), which have no products.
double layer_cost(int layer);

/// The split into `stages` stages whose slowest stage (by layer_cost) is as light as
/// possible; among such splits, the next slowest as light as possible, and so on. For
/// 2 stages: conv1..norm1 | conv2..softmax_linear. 1 <= stages <= model::kLayerCount.
std::vector<StageLayers> default_split(int stages);

/// Parses --split: the first layer of stages 1..p-1 by name, comma-separated and in
/// forward order ("conv2,norm2,local3" for four stages). On a bad value returns empty and
/// sets `problem` to what is wrong and what to write instead.
std::vector<StageLayers> parse_split(const std::string& text, int stages, std::string& problem);

/// The --split text of `split`: "conv2,norm2,local3" ("" for one stage).
std::string split_flag(const std::vector<StageLayers>& split);

/// "conv1-norm1" or "conv2": a stage's layers by name, for printing.
std::string stage_name(const StageLayers& stage);

/// The variables of a stage's layers in the flat buffer.
ParameterRange stage_parameters(const StageLayers& stage);

}  // namespace towers

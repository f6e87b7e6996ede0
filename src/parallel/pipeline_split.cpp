// SPDX-License-Identifier: MIT
#include "parallel/pipeline_split.hpp"

#include <algorithm>
#include <functional>
#include <sstream>

#include "model/gradient_layers.hpp"
#include "model/network.hpp"
#include "model/parameters.hpp"

namespace towers {
namespace {

const std::string& name_of(int layer) {
  return model::Network::layer_names()[static_cast<std::size_t>(layer)];
}

// Every split into `stages` runs of consecutive layers, as the first layer of each stage
// after the first; `visit` sees each.
void each_split(int stages, const std::function<void(const std::vector<int>&)>& visit) {
  std::vector<int> starts;
  std::function<void(int)> choose = [&](int from) {
    if (static_cast<int>(starts.size()) == stages - 1) {
      visit(starts);
      return;
    }
    const int left = stages - 1 - static_cast<int>(starts.size());
    for (int layer = from; layer <= model::kLayerCount - left; ++layer) {
      starts.push_back(layer);
      choose(layer + 1);
      starts.pop_back();
    }
  };
  choose(1);
}

std::vector<StageLayers> from_starts(const std::vector<int>& starts) {
  std::vector<StageLayers> split;
  int first = 0;
  for (int start : starts) {
    split.push_back({first, start - 1});
    first = start;
  }
  split.push_back({first, model::kLayerCount - 1});
  return split;
}

}  // namespace

double layer_cost(int layer) {
  // Products: y[rows, out] = x[rows, in] w[in, out] per image, backward twice that (the
  // weights' gradient and the input's; conv1 has no input gradient).
  auto products = [](const char* weights, int rows, int passes) {
    return static_cast<double>(model::parameter(weights).count) * rows * passes;
  };
  double cost = 2.0 * model::Network::layer_output_floats(layer);  // elementwise, both ways
  switch (layer) {
    case model::kConv1:
      cost += products("conv1/weights", 24 * 24, 2);
      break;
    case model::kConv2:
      cost += products("conv2/weights", 12 * 12, 3);
      break;
    case model::kLocal3:
      cost += products("local3/weights", 1, 3);
      break;
    case model::kLocal4:
      cost += products("local4/weights", 1, 3);
      break;
    case model::kSoftmaxLinear:
      cost += products("softmax_linear/weights", 1, 3);
      break;
    default:
      break;
  }
  return cost;
}

std::vector<StageLayers> default_split(int stages) {
  // Few enough splits to try them all (at most 70): keep the one whose stage costs,
  // sorted slowest first, are smallest in dictionary order.
  std::vector<StageLayers> best;
  std::vector<double> best_costs;
  each_split(stages, [&](const std::vector<int>& starts) {
    const std::vector<StageLayers> split = from_starts(starts);
    std::vector<double> costs;
    for (const StageLayers& stage : split) {
      double cost = 0;
      for (int layer = stage.first; layer <= stage.last; ++layer) cost += layer_cost(layer);
      costs.push_back(cost);
    }
    std::sort(costs.begin(), costs.end(), std::greater<>());
    if (best.empty() || costs < best_costs) {
      best = split;
      best_costs = costs;
    }
  });
  return best;
}

std::vector<StageLayers> parse_split(const std::string& text, int stages, std::string& problem) {
  std::vector<int> starts;
  std::stringstream items(text);
  std::string item;
  const auto& names = model::Network::layer_names();
  while (!text.empty() && std::getline(items, item, ',')) {
    const auto found = std::find(names.begin(), names.end(), item);
    if (found == names.end() || found == names.begin()) {
      problem = "--split: '" + item + "' is not a layer a stage can start at; use conv1's " +
                "successors: pool1 norm1 conv2 norm2 pool2 local3 local4 softmax_linear";
      return {};
    }
    const int layer = static_cast<int>(found - names.begin());
    if (!starts.empty() && layer <= starts.back()) {
      problem = "--split " + text +
                ": the layers must be in forward order, each once "
                "(e.g. conv2,norm2,local3)";
      return {};
    }
    starts.push_back(layer);
  }
  if (static_cast<int>(starts.size()) != stages - 1) {
    problem = "--split " + text + " names " + std::to_string(starts.size()) + " cut(s); " +
              std::to_string(stages) + " stages need " + std::to_string(stages - 1) +
              ": the first layer of each stage after the first (default for " +
              std::to_string(stages) + ": " + split_flag(default_split(stages)) + ")";
    return {};
  }
  return from_starts(starts);
}

std::string split_flag(const std::vector<StageLayers>& split) {
  std::string text;
  for (std::size_t s = 1; s < split.size(); ++s) {
    text += (text.empty() ? "" : ",") + name_of(split[s].first);
  }
  return text;
}

std::string stage_name(const StageLayers& stage) {
  if (stage.first == stage.last) return name_of(stage.first);
  return name_of(stage.first) + "-" + name_of(stage.last);
}

ParameterRange stage_parameters(const StageLayers& stage) {
  // gradient_layers() names the layers with variables and their ranges (weights, biases).
  ParameterRange range;
  bool any = false;
  for (int layer = stage.first; layer <= stage.last; ++layer) {
    for (const model::GradientLayer& owned : model::gradient_layers()) {
      if (owned.name != name_of(layer)) continue;
      if (!any) range.offset = owned.offset;
      range.count = owned.offset + owned.count - range.offset;
      any = true;
    }
  }
  return range;
}

}  // namespace towers

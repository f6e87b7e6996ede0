// SPDX-License-Identifier: MIT
// The ten variables of cifar10.py's inference(), laid out back to back, and their
// initial values: tf.truncated_normal_initializer weights and constant biases.
#include "model/parameters.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "data/rng.hpp"

namespace towers::model {
namespace {

// Appends one variable after the previous ones; `stddev` 0 means a constant `value`.
void add(std::vector<ParameterView>& layout, std::string name, std::vector<int> shape,
         float stddev, float value, float wd) {
  ParameterView view;
  view.name = std::move(name);
  view.shape = std::move(shape);
  view.offset = layout.empty() ? 0 : layout.back().offset + layout.back().count;
  view.count = 1;
  for (int d : view.shape) view.count *= static_cast<std::size_t>(d);
  view.init_stddev = stddev;
  view.init_value = value;
  view.weight_decay = wd;
  layout.push_back(std::move(view));
}

std::vector<ParameterView> make_layout() {
  std::vector<ParameterView> layout;
  // Conv kernels HWIO [kh, kw, in, out]; fully connected weights [in, out] (cifar10.py).
  add(layout, "conv1/weights", {5, 5, 3, 64}, 5e-2f, 0.0f, 0.0f);
  add(layout, "conv1/biases", {64}, 0.0f, 0.0f, 0.0f);
  add(layout, "conv2/weights", {5, 5, 64, 64}, 5e-2f, 0.0f, 0.0f);
  add(layout, "conv2/biases", {64}, 0.0f, 0.1f, 0.0f);
  add(layout, "local3/weights", {2304, 384}, 0.04f, 0.0f, 0.004f);
  add(layout, "local3/biases", {384}, 0.0f, 0.1f, 0.0f);
  add(layout, "local4/weights", {384, 192}, 0.04f, 0.0f, 0.004f);
  add(layout, "local4/biases", {192}, 0.0f, 0.1f, 0.0f);
  add(layout, "softmax_linear/weights", {192, 10}, 1.0f / 192.0f, 0.0f, 0.0f);
  add(layout, "softmax_linear/biases", {10}, 0.0f, 0.0f, 0.0f);
  if (layout.back().offset + layout.back().count != kNumParameters) {
    throw std::logic_error("parameter layout does not add up to kNumParameters");
  }
  return layout;
}

// A standard normal draw (Box-Muller, cosine half), from 53-bit uniforms so that the
// tails reach the 2-stddev cut with full resolution.
double standard_normal(data::Rng& rng) {
  const double u1 = 1.0 - static_cast<double>(rng.next_u64() >> 11) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(rng.next_u64() >> 11) * 0x1.0p-53;        // [0, 1)
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace

const std::vector<ParameterView>& parameter_layout() {
  static const std::vector<ParameterView> layout = make_layout();
  return layout;
}

const ParameterView& parameter(const std::string& name) {
  for (const ParameterView& view : parameter_layout()) {
    if (view.name == name) return view;
  }
  throw std::out_of_range("no model parameter named '" + name + "'");
}

void initialize_parameters(std::uint64_t seed, float* params) {
  const std::vector<ParameterView>& layout = parameter_layout();
  for (std::size_t v = 0; v < layout.size(); ++v) {
    const ParameterView& view = layout[v];
    float* w = params + view.offset;
    if (view.init_stddev == 0.0f) {
      for (std::size_t i = 0; i < view.count; ++i) w[i] = view.init_value;
      continue;
    }
    // One stream per variable: a variable's values do not depend on the sizes of the
    // variables before it. Truncated normal: a draw beyond 2 stddev is drawn again.
    data::Rng rng(data::mix_seed(seed, v));
    for (std::size_t i = 0; i < view.count; ++i) {
      double z = standard_normal(rng);
      while (std::fabs(z) > 2.0) z = standard_normal(rng);
      w[i] = static_cast<float>(z * view.init_stddev);
    }
  }
}

}  // namespace towers::model

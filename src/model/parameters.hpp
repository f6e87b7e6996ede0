// SPDX-License-Identifier: MIT
// The tutorial model's parameters, as one flat buffer with a view per variable.
//
// Every replica keeps all 1,068,298 parameters in one contiguous float buffer, in the
// order of parameter_layout(), in TF's layouts (conv kernels HWIO [kh, kw, in, out],
// fully connected weights [in, out]). Gradients use the same layout in a second buffer,
// so averaging gradients is one operation on one buffer, and "are the replicas equal?"
// is one comparison. Introduced in chapter 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace towers::model {

/// One variable of the model inside the flat buffer.
struct ParameterView {
  std::string name;           ///< TF's name, e.g. "conv1/weights"
  std::vector<int> shape;     ///< TF layout
  std::size_t offset = 0;     ///< first element in the flat buffer
  std::size_t count = 0;      ///< number of elements (product of shape)
  float init_stddev = 0;      ///< truncated normal stddev; 0 for biases
  float init_value = 0;       ///< constant initial value (biases)
  float weight_decay = 0;     ///< wd: loss += wd * sum(w^2) / 2
};

/// Total parameter count of the tutorial model.
inline constexpr std::size_t kNumParameters = 1068298;

/// The ten variables in buffer order: conv1/{weights,biases}, conv2/..., local3/...,
/// local4/..., softmax_linear/....
const std::vector<ParameterView>& parameter_layout();

/// The view named `name`; throws std::out_of_range for an unknown name.
const ParameterView& parameter(const std::string& name);

/// Fills `params[kNumParameters]` (host memory) with the tutorial's initial values:
/// truncated normal weights (draws beyond 2 stddev redrawn), constant biases.
/// Deterministic for a seed.
void initialize_parameters(std::uint64_t seed, float* params);

}  // namespace towers::model

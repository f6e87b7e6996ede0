// SPDX-License-Identifier: MIT
// What chapter 10's two test files share: the batch they run, the bit comparison and the
// rounding bound. One definition, so that the files can also be compiled as one (the
// sanitizer presets' unity builds), where two copies in anonymous namespaces collide.
#pragma once

#include <cmath>
#include <cstring>
#include <vector>

namespace towers::chapter10_tests {

inline constexpr int kBatch = 8;  // images a step: the tensor split's global batch

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// Higham's gamma(k) = k u / (1 - k u), u = 2^-24: the relative error bound of a sum of
/// k + 1 floats in any order.
inline double gamma(double k) {
  const double u = std::ldexp(1.0, -24);
  return k * u / (1 - k * u);
}

}  // namespace towers::chapter10_tests

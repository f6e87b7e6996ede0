// SPDX-License-Identifier: MIT
// Test helpers for the ops: seeded random inputs, central finite differences in double,
// and an element-by-element comparison that prints the largest difference.
//
// A gradient test writes the op's forward pass in double (an oracle independent of
// kernels/math), takes the scalar L(x) = sum_i r_i * f(x)_i for fixed random weights r,
// and compares dL/dx from finite differences with the op's float backward pass fed
// dy = r.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace towers::testing {

/// n values uniform in [lo, hi), from a generator seeded with `seed`.
inline std::vector<float> random_floats(int n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

/// n distinct values spaced `gap` apart, shuffled, centred on 0: inputs whose maxima and
/// signs do not change under a finite-difference step much smaller than `gap`.
inline std::vector<float> distinct_floats(int n, unsigned seed, float gap = 0.01f) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = gap * (static_cast<float>(i) - n / 2.0f + 0.5f);
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

/// A float vector widened to double.
inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

/// dL/dx by central differences in double: (L(x + h e_i) - L(x - h e_i)) / 2h.
inline std::vector<double> numerical_gradient(
    const std::function<double(const std::vector<double>&)>& loss, std::vector<double> x,
    double h = 1e-4) {
  std::vector<double> grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = loss(x);
    x[i] = saved - h;
    const double down = loss(x);
    x[i] = saved;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

/// sum_i r_i * y_i: the scalar whose gradient with respect to y is r.
inline double weighted_sum(const std::vector<double>& r, const std::vector<double>& y) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += r[i] * y[i];
  return s;
}

/// Expects |actual - expected| <= abs_tol + rel_tol * |expected| element by element;
/// prints the largest difference, and the first few elements out of tolerance.
template <typename A, typename E>
void expect_close(const std::string& what, const std::vector<A>& actual,
                  const std::vector<E>& expected, double abs_tol, double rel_tol) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double max_diff = 0;
  size_t worst = 0;
  int wrong = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], e = expected[i];
    const double diff = std::fabs(a - e);
    if (!(diff <= max_diff)) max_diff = diff, worst = i;  // NaN counts as worst
    if (!(diff <= abs_tol + rel_tol * std::fabs(e))) {
      if (++wrong <= 5) ADD_FAILURE() << what << "[" << i << "]: " << a << " vs expected " << e;
    }
  }
  std::printf("  %-40s n=%zu max|diff|=%.3g at %zu, #wrong=%d\n", what.c_str(), actual.size(),
              max_diff, worst, wrong);
  EXPECT_EQ(wrong, 0) << what;
}

}  // namespace towers::testing

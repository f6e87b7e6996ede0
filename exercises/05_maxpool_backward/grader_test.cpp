// SPDX-License-Identifier: MIT
// Grader of exercise 05: max pooling's backward pass as one TOWERS_HD function, called
// here in a host loop, checked against kernels/math/pool.hpp and finite differences.
// Each test is one point.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/math/pool.hpp"

// The graded max_pool_input_grad, compiled apart in graded_call.cpp.
#include "graded_call.hpp"

namespace towers::exercises {
namespace {

std::string describe(math::Nhwc s) {
  return "[" + std::to_string(s.batch) + ", " + std::to_string(s.height) + ", " +
         std::to_string(s.width) + ", " + std::to_string(s.channels) + "]";
}

// A forward pass of max pooling: outputs y and their argmax, from the reference math.
struct Pooled {
  std::vector<float> y;
  std::vector<int> argmax;
};

Pooled forward(const std::vector<float>& x, math::Nhwc in) {
  const int n = math::max_pool_output_shape(in).size();
  Pooled p{std::vector<float>(n), std::vector<int>(n)};
  for (int o = 0; o < n; ++o) {
    const math::PoolMax m = math::max_pool_forward(o, x.data(), in);
    p.y[o] = m.value;
    p.argmax[o] = m.index;
  }
  return p;
}

// The library's own backward pass is what the student's function is compared with; a
// file that calls it (or includes it, or the ops built on it) has not written the gather.
// Checked on the graded file's code (comments aside), once; "" when it is clean, else the
// line that gives it away. graded_call.cpp compiles the file without pool.hpp besides.
std::string library_shortcut() {
  std::ifstream file(graded_source_file());
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    line = line.substr(0, line.find("//"));  // code only: a comment may name the library
    for (const char* banned : {"max_pool_backward", "math/pool.hpp", "ops_fast_host", "model/ops"}) {
      if (line.find(banned) != std::string::npos) {
        return "line " + std::to_string(number) + " uses " + banned + ": " + line;
      }
    }
  }
  return "";
}

// Cells poisoned around dy and argmax: for element i, every argmax guard cell says "i"
// and every dy guard cell holds kGuardGradient, so a read outside the outputs (a missing
// oy < 0, ox < 0, oy >= out_h or ox >= out_w check) adds kGuardGradient to dx[i]: caught
// on the host, where a GPU would fault or read garbage.
constexpr float kGuardGradient = 1.0e6f;

// dx from the student's function, in a host loop (what a kernel's grid-stride loop does),
// with dy and argmax inside poisoned guard cells (one output image row and more, each side).
std::vector<float> student_dx(const std::vector<float>& dy, const std::vector<int>& argmax,
                              math::Nhwc in) {
  static const std::string shortcut = library_shortcut();
  if (!shortcut.empty()) {
    ADD_FAILURE() << "expected max_pool_input_grad to do the gather itself, got a call of the "
                     "library's backward pass (" << shortcut << "); hint: write the loop over "
                     "the 2 x 2 outputs yourself, kernels/math/pool.hpp is what you are graded against";
    return std::vector<float>(in.size(), std::nanf(""));
  }
  const math::Nhwc out = math::max_pool_output_shape(in);
  const std::size_t guard = 2 * static_cast<std::size_t>(out.width * out.channels) + 16;
  const std::size_t n = dy.size();
  std::vector<float> guarded_dy(n + 2 * guard, kGuardGradient);
  std::vector<int> guarded_argmax(n + 2 * guard);
  std::copy(dy.begin(), dy.end(), guarded_dy.begin() + guard);
  std::copy(argmax.begin(), argmax.end(), guarded_argmax.begin() + guard);
  std::vector<float> dx(in.size());
  for (int i = 0; i < in.size(); ++i) {
    std::fill(guarded_argmax.begin(), guarded_argmax.begin() + guard, i);
    std::fill(guarded_argmax.end() - guard, guarded_argmax.end(), i);
    dx[i] = graded_input_grad(i, guarded_dy.data() + guard, guarded_argmax.data() + guard, in);
  }
  return dx;
}

// The likeliest cause of a wrong dx, from all the elements that are wrong: a read outside
// the outputs when any holds a guard gradient; padding only when every wrong element is a
// border cell (the cells padding decides about); otherwise the test's own hint. Returns the
// element to show, and the hint.
struct Diagnosis {
  int element;
  std::string hint;
};
Diagnosis diagnose(const std::vector<float>& got, const std::vector<float>& want, math::Nhwc in,
                   const std::string& otherwise) {
  int first = -1, first_inner = -1;
  for (int i = 0; i < in.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (std::abs(got[i]) >= kGuardGradient / 2) {
      return {i, "dx[i] includes a dy read OUTSIDE the output: skip the outputs with oy < 0, "
                 "ox < 0, oy >= out_h or ox >= out_w before reading dy[o] or argmax[o]"};
    }
    if (first < 0) first = i;
    const int ix = (i / in.channels) % in.width, iy = (i / (in.channels * in.width)) % in.height;
    const bool border = iy == 0 || iy == in.height - 1 || ix == 0 || ix == in.width - 1;
    if (!border && first_inner < 0) first_inner = i;
  }
  if (first < 0) return {-1, ""};
  if (first_inner >= 0) return {first_inner, otherwise};
  return {first, "only border cells are wrong, and SAME padding decides which windows cover "
                 "them: out = ceil(in / 2), padding before = ((out - 1) * 2 + 3 - in) / 2 (0 "
                 "for even sizes, 1 for odd ones), the rest after"};
}

std::vector<float> reference_dx(const std::vector<float>& dy, const std::vector<int>& argmax,
                                math::Nhwc in) {
  std::vector<float> dx(in.size());
  for (int i = 0; i < in.size(); ++i) dx[i] = math::max_pool_backward(i, dy.data(), argmax.data(), in);
  return dx;
}

// Seeded values in [-1, 1) (x) or small integers (dy, so every gathered sum is exact).
std::vector<float> random_x(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}
std::vector<float> random_dy(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(-8, 8);
  std::vector<float> v(n);
  for (float& f : v) f = static_cast<float>(u(rng));
  return v;
}

// Compares the student's dx with the reference for one input shape; one line on failure.
void expect_reference(math::Nhwc in, const std::vector<float>& x, const std::vector<int>* argmax_override,
                      const std::string& hint) {
  Pooled p = forward(x, in);
  const std::vector<int>& argmax = argmax_override ? *argmax_override : p.argmax;
  const std::vector<float> dy = random_dy(static_cast<int>(p.y.size()), 5);
  const std::vector<float> got = student_dx(dy, argmax, in), want = reference_dx(dy, argmax, in);
  const Diagnosis wrong = diagnose(got, want, in, hint);
  if (wrong.element < 0) return;
  const int i = wrong.element;
  const int c = i % in.channels, ix = (i / in.channels) % in.width;
  const int iy = (i / (in.channels * in.width)) % in.height, n = i / (in.channels * in.width * in.height);
  ADD_FAILURE() << "expected dx[" << i << "] (n=" << n << ", y=" << iy << ", x=" << ix << ", c=" << c
                << ") of input " << describe(in) << " to be " << want[i] << ", got " << got[i]
                << "; hint: " << wrong.hint;
}

TEST(MaxPoolBackward, MatchesTheReferenceOnTheModelsShapes) {
  // pool1 sees [batch, 24, 24, 64] and pool2 [batch, 12, 12, 64]; fewer channels suffice.
  for (math::Nhwc in : {math::Nhwc{2, 24, 24, 3}, math::Nhwc{2, 12, 12, 5}}) {
    expect_reference(in, random_x(in.size(), 1), nullptr,
                     "add up dy[o] over EVERY output o (of this image and channel) whose window "
                     "covers the input and whose argmax[o] is this input");
  }
}

TEST(MaxPoolBackward, MatchesTheReferenceOnOddSizesAndPaddedEdges) {
  // Odd extents pad one cell before and one after; 1 x 1 has a single window.
  for (math::Nhwc in : {math::Nhwc{1, 1, 1, 1}, math::Nhwc{1, 1, 2, 1}, math::Nhwc{1, 2, 1, 2},
                        math::Nhwc{1, 3, 3, 1}, math::Nhwc{2, 5, 7, 2}, math::Nhwc{1, 7, 5, 3},
                        math::Nhwc{1, 4, 9, 1}}) {
    SCOPED_TRACE("input " + describe(in));
    expect_reference(in, random_x(in.size(), 2), nullptr,
                     "an inner cell: visit every output whose 3 x 3 window covers it (oy from "
                     "py / 2 - 1 to py / 2, in padded coordinates) and follow argmax");
  }
}

TEST(MaxPoolBackward, MatchesFiniteDifferences) {
  // L = sum_o dy[o] * y[o]; near x, max pooling is linear, so dL/dx_i is the gather.
  // x holds distinct values 0.03 apart, so a nudge of h = 1e-3 never changes an argmax.
  const math::Nhwc in{1, 6, 7, 2};
  std::vector<float> x(in.size());
  std::iota(x.begin(), x.end(), 0.0f);
  std::shuffle(x.begin(), x.end(), std::mt19937(3));
  for (float& v : x) v = v * 0.03f - 1.0f;
  Pooled p = forward(x, in);
  const std::vector<float> dy = random_dy(static_cast<int>(p.y.size()), 4);
  const std::vector<float> got = student_dx(dy, p.argmax, in);
  auto loss = [&](const std::vector<float>& xs) {
    Pooled q = forward(xs, in);
    double sum = 0;
    for (std::size_t o = 0; o < q.y.size(); ++o) sum += double(dy[o]) * q.y[o];
    return sum;
  };
  const float h = 1e-3f;
  for (int i = 0; i < in.size(); ++i) {
    std::vector<float> plus = x, minus = x;
    plus[i] += h;
    minus[i] -= h;
    const double numeric = (loss(plus) - loss(minus)) / (double(plus[i]) - minus[i]);
    ASSERT_NEAR(got[i], numeric, 1e-2 + 1e-3 * std::abs(numeric))
        << "expected dx[" << i << "] to match the finite difference " << numeric << ", got "
        << got[i] << "; hint: an input gets dy[o] for each output o it is the maximum of, "
                     "and 0 when it is the maximum of none";
  }
}

TEST(MaxPoolBackward, SumsTheGradientsOfOverlappingWindows) {
  // In a 5 x 5 input (one cell of padding before), rows and columns 1 and 3 are covered by
  // two windows each. Make (1, 1) the largest value: it wins all four windows over it.
  const math::Nhwc in{1, 5, 5, 1};
  std::vector<float> x(in.size(), 0.0f);
  x[in.offset(0, 1, 1, 0)] = 100.0f;
  Pooled p = forward(x, in);
  const math::Nhwc out = math::max_pool_output_shape(in);
  std::vector<float> dy(out.size(), 0.0f);
  dy[out.offset(0, 0, 0, 0)] = 1;
  dy[out.offset(0, 0, 1, 0)] = 2;
  dy[out.offset(0, 1, 0, 0)] = 4;
  dy[out.offset(0, 1, 1, 0)] = 8;
  const std::vector<float> got = student_dx(dy, p.argmax, in);
  EXPECT_EQ(got[in.offset(0, 1, 1, 0)], 15.0f)
      << "expected dx at (1, 1) = 1 + 2 + 4 + 8 = 15 (it is the maximum of four overlapping "
         "windows), got " << got[in.offset(0, 1, 1, 0)]
      << "; hint: visit every output whose window covers the input (up to 2 x 2), not just one";
}

TEST(MaxPoolBackward, RoutesTheGradientToTheRecordedArgmax) {
  // On ties the forward pass picks the first maximum in the window; the backward pass must
  // follow argmax, not compare values again. Here every value is equal, and argmax is then
  // moved to the *last* real cell of each window: dx must follow it.
  const math::Nhwc in{1, 6, 6, 2};
  const std::vector<float> x(in.size(), 0.5f);
  Pooled p = forward(x, in);
  const math::Nhwc out = math::max_pool_output_shape(in);
  std::vector<int> last(out.size());
  for (int o = 0; o < out.size(); ++o) {
    const int c = o % out.channels, ox = (o / out.channels) % out.width;
    const int oy = o / (out.channels * out.width);
    const int y = std::min(oy * 2 + 2 - math::pool_pad_before(in.height), in.height - 1);
    const int xx = std::min(ox * 2 + 2 - math::pool_pad_before(in.width), in.width - 1);
    last[o] = in.offset(0, y, xx, c);
  }
  expect_reference(in, x, &last,
                   "add dy[o] exactly when argmax[o] == i; do not look at the input values");
}

TEST(MaxPoolBackward, ReadsOnlyTheOutputsWhoseWindowsCoverTheInput) {
  // A gather visits the (at most) 2 x 2 outputs whose windows cover input i: constant work
  // per element. Scanning every output for argmax[o] == i gives the same dx on a consistent
  // argmax but costs a pass over the whole output per element (quadratic; on a GPU, every
  // thread reads all of dy). So here, for each i, every output whose window does NOT cover
  // i claims i as its argmax and holds kGuardGradient: only a visit outside the 2 x 2 sees it.
  const math::Nhwc in{2, 6, 8, 2};
  const math::Nhwc out = math::max_pool_output_shape(in);
  Pooled p = forward(random_x(static_cast<int>(in.size()), 6), in);
  const std::vector<float> dy = random_dy(static_cast<int>(out.size()), 7);
  const std::vector<float> want = reference_dx(dy, p.argmax, in);
  const int pad_y = math::pool_pad_before(in.height), pad_x = math::pool_pad_before(in.width);
  for (int i = 0; i < in.size(); ++i) {
    const int c = i % in.channels, ix = (i / in.channels) % in.width;
    const int iy = (i / (in.channels * in.width)) % in.height;
    const int n = i / (in.channels * in.width * in.height);
    std::vector<float> far_dy = dy;
    std::vector<int> far_argmax = p.argmax;
    for (int o = 0; o < out.size(); ++o) {
      const int oc = o % out.channels, ox = (o / out.channels) % out.width;
      const int oy = (o / (out.channels * out.width)) % out.height;
      const int on = o / (out.channels * out.width * out.height);
      const int dy_rows = iy + pad_y - oy * 2, dx_cols = ix + pad_x - ox * 2;
      const bool covers = on == n && oc == c && dy_rows >= 0 && dy_rows < 3 && dx_cols >= 0 &&
                          dx_cols < 3;
      if (!covers) {
        far_dy[o] = kGuardGradient;
        far_argmax[o] = i;
      }
    }
    const float got = graded_input_grad(i, far_dy.data(), far_argmax.data(), in);
    ASSERT_EQ(got, want[i])
        << "expected dx[" << i << "] (n=" << n << ", y=" << iy << ", x=" << ix << ", c=" << c
        << ") of input " << describe(in) << " to be " << want[i] << ", got " << got
        << (std::abs(got) >= kGuardGradient / 2
                ? "; hint: dx[i] includes dy[o] of an output whose window does not cover the "
                  "input: visit only the outputs around it (oy from py / 2 - 1 to py / 2, ox "
                  "likewise, each inside the output grid), not every output"
                : "; hint: add dy[o] exactly when argmax[o] == i, over the outputs whose "
                  "window covers the input");
  }
}

}  // namespace
}  // namespace towers::exercises

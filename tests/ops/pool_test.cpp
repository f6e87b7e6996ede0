// SPDX-License-Identifier: MIT
// Max pooling 3x3/2 SAME (kernels/math/pool.hpp): TensorFlow's output sizes and padding,
// padded cells never winning, and the gather backward against finite differences.
#include <gtest/gtest.h>

#include <vector>

#include "check.hpp"
#include "kernels/host/kernels.hpp"
#include "kernels/math/pool.hpp"

namespace towers {
namespace {

using math::Nhwc;

TEST(MaxPool, SameOutputSizesAndPaddingMatchTensorFlow) {
  EXPECT_EQ(math::pool_output_extent(24), 12);  // pool1: 24 -> 12
  EXPECT_EQ(math::pool_output_extent(12), 6);   // pool2: 12 -> 6
  EXPECT_EQ(math::pool_output_extent(5), 3);
  EXPECT_EQ(math::pool_pad_before(24), 0);  // total pad 1, all of it after
  EXPECT_EQ(math::pool_pad_before(12), 0);
  EXPECT_EQ(math::pool_pad_before(5), 1);   // total pad 2: one before, one after
}

TEST(MaxPool, WindowsOfAFourByFourImage) {
  const Nhwc in{1, 4, 4, 1};
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);  // x[r][c] = 4r + c
  std::vector<float> y(4);
  std::vector<int> argmax(4);
  host::max_pool_forward(x.data(), in, y.data(), argmax.data());
  // Windows: rows {0,1,2} or {2,3,pad} times columns {0,1,2} or {2,3,pad}.
  EXPECT_EQ(y, (std::vector<float>{10, 11, 14, 15}));
  EXPECT_EQ(argmax, (std::vector<int>{10, 11, 14, 15}));
}

TEST(MaxPool, PaddedCellsNeverWinEvenOverNegativeValues) {
  const Nhwc in{1, 4, 4, 1};
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = -1.0f - static_cast<float>(i);  // all negative
  std::vector<float> y(4);
  std::vector<int> argmax(4);
  host::max_pool_forward(x.data(), in, y.data(), argmax.data());
  // The last window is x[2..3][2..3] plus padding; a zero pad would have won.
  EXPECT_EQ(y, (std::vector<float>{-1, -3, -9, -11}));
  EXPECT_EQ(argmax, (std::vector<int>{0, 2, 8, 10}));
}

TEST(MaxPool, BackwardSumsEveryOutputWhoseArgmaxIsTheInput) {
  const Nhwc in{1, 4, 4, 1};
  std::vector<float> x(16, 0.0f);
  x[10] = 5.0f;  // (2, 2) lies in all four windows and wins all of them
  std::vector<float> y(4), dy = {1, 2, 4, 8}, dx(16);
  std::vector<int> argmax(4);
  host::max_pool_forward(x.data(), in, y.data(), argmax.data());
  host::max_pool_backward(dy.data(), argmax.data(), in, dx.data());
  std::vector<float> expected(16, 0.0f);
  expected[10] = 15.0f;
  EXPECT_EQ(dx, expected);
}

// Max pooling in double, windows placed with TF's SAME formula written out again.
std::vector<double> max_pool_reference(const std::vector<double>& x, Nhwc in) {
  const int oh = (in.height + 1) / 2, ow = (in.width + 1) / 2;
  const int top = ((oh - 1) * 2 + 3 - in.height) / 2, left = ((ow - 1) * 2 + 3 - in.width) / 2;
  std::vector<double> y;
  for (int n = 0; n < in.batch; ++n)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox)
        for (int c = 0; c < in.channels; ++c) {
          double best = -1e300;
          for (int iy = oy * 2 - top; iy <= oy * 2 - top + 2; ++iy)
            for (int ix = ox * 2 - left; ix <= ox * 2 - left + 2; ++ix)
              if (iy >= 0 && iy < in.height && ix >= 0 && ix < in.width)
                best = std::max(best, x[in.offset(n, iy, ix, c)]);
          y.push_back(best);
        }
  return y;
}

TEST(MaxPool, ForwardAndBackwardMatchDoubleReference) {
  const Nhwc in{2, 5, 6, 3};  // odd height: padding before and after
  const Nhwc out = math::max_pool_output_shape(in);
  ASSERT_EQ(out.height, 3);
  ASSERT_EQ(out.width, 3);
  const auto x = testing::distinct_floats(in.size(), 11);  // no ties within a step
  const auto r = testing::random_floats(out.size(), 12);
  std::vector<float> y(out.size()), dx(in.size());
  std::vector<int> argmax(out.size());
  host::max_pool_forward(x.data(), in, y.data(), argmax.data());
  host::max_pool_backward(r.data(), argmax.data(), in, dx.data());

  const auto xd = testing::to_double(x), rd = testing::to_double(r);
  testing::expect_close("max pool forward", y, max_pool_reference(xd, in), 0.0, 0.0);
  const auto numeric = testing::numerical_gradient(
      [&](const std::vector<double>& v) {
        return testing::weighted_sum(rd, max_pool_reference(v, in));
      },
      xd);
  testing::expect_close("max pool dx vs finite differences", dx, numeric, 1e-6, 1e-4);
}

}  // namespace
}  // namespace towers

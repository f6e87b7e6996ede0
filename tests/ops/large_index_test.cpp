// SPDX-License-Identifier: MIT
// Index math past 2^31 elements (issue 17): the shared functions that both the CUDA
// grid-stride loops and the host loops call compute 64-bit indices, so a tensor larger
// than INT32_MAX elements is addressed correctly. Only indices are computed here: nothing
// of that size is allocated.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "kernels/math/conv.hpp"
#include "kernels/math/pool.hpp"
#include "kernels/math/shape.hpp"

namespace towers {
namespace {

using math::Index;
using math::Nhwc;

constexpr Index kInt32Max = std::numeric_limits<std::int32_t>::max();

// conv2's input at a batch of 10,000: its im2col matrix has 2.3e9 elements.
constexpr Nhwc kConv2Input{10000, 12, 12, 64};
constexpr int kKernel = 5;

TEST(LargeIndex, ShapeCountsPastInt32DoNotWrap) {
  const Nhwc s{65536, 24, 24, 64};  // conv1's output at the old --batch-size limit
  EXPECT_EQ(s.pixels(), Index{65536} * 24 * 24);
  EXPECT_EQ(s.size(), Index{65536} * 24 * 24 * 64);
  EXPECT_GT(s.size(), kInt32Max);
  EXPECT_EQ(s.offset(65535, 23, 23, 63), s.size() - 1) << "the last element is the last offset";
}

TEST(LargeIndex, Im2colOfConv2PastInt32FindsTheRightInputElement) {
  const Nhwc s = kConv2Input;
  const int columns = math::im2col_columns(kKernel, s.channels);  // 1600
  const Index elements = s.pixels() * columns;
  ASSERT_GT(elements, kInt32Max) << "the case this test exists for";

  // The last image's output pixel (oy, ox) = (6, 7), kernel cell (kh, kw) = (3, 1),
  // channel 42: reads input pixel (6 + 3 - 2, 7 + 1 - 2) = (7, 6) of image 9,999.
  const int n = 9999, oy = 6, ox = 7, kh = 3, kw = 1, c = 42;
  const Index row = (Index{n} * s.height + oy) * s.width + ox;
  const Index i = row * columns + (kh * kKernel + kw) * s.channels + c;
  ASSERT_GT(i, kInt32Max);
  EXPECT_EQ(math::im2col_source(i, s, kKernel), s.offset(n, 7, 6, c));

  // The very last element: output pixel (11, 11), kernel cell (4, 4) hangs over the edge.
  EXPECT_EQ(math::im2col_source(elements - 1, s, kKernel), -1);
  // Kernel cell (2, 2) of the last pixel reads the last pixel itself.
  const Index last_row = s.pixels() - 1;
  EXPECT_EQ(math::im2col_source(last_row * columns + (2 * kKernel + 2) * s.channels + 63, s, kKernel),
            s.size() - 1);
}

TEST(LargeIndex, Col2imPastInt32ReadsTheColumnIm2colWrote) {
  // col2im gathers exactly the entries im2col scattered: for an element far past 2^31 in
  // the col matrix, the two index maps are inverse to each other.
  const Nhwc s = kConv2Input;
  const int n = 9876, iy = 5, ix = 9, c = 17, kh = 1, kw = 4;
  const Index j = math::col2im_source(n, iy, ix, c, kh, kw, s, kKernel);
  ASSERT_GT(j, kInt32Max);
  EXPECT_EQ(math::im2col_source(j, s, kKernel), s.offset(n, iy, ix, c));
}

TEST(LargeIndex, MaxPoolOffsetsOfALargeBatchStayInRange) {
  // pool1's output index near the end of a tensor of 2.4e9 elements.
  const Nhwc in{65536, 24, 24, 64};
  const Nhwc out = math::max_pool_output_shape(in);
  ASSERT_GT(in.size(), kInt32Max);
  EXPECT_EQ(out.offset(65535, 11, 11, 63), out.size() - 1);
  EXPECT_GT(out.size() - 1, Index{0});
}

}  // namespace
}  // namespace towers

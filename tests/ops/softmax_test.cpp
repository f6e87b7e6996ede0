// SPDX-License-Identifier: MIT
// Softmax cross-entropy and top-1 (kernels/math/softmax.hpp): stable for huge logits,
// gradient of the batch mean, and ties counted as correct as in tf.nn.in_top_k.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "check.hpp"
#include "kernels/host/kernels.hpp"
#include "kernels/math/softmax.hpp"

namespace towers {
namespace {

TEST(SoftmaxCrossEntropy, HandComputedAndStableForHugeLogits) {
  const std::vector<float> logits = {0, 0,      // uniform: loss ln 2
                                     1000, 0};  // exp(1000) overflows unless shifted
  const std::vector<int> labels = {0, 0};
  std::vector<float> loss(2), dlogits(4);
  host::softmax_cross_entropy(2, 2, logits.data(), labels.data(), loss.data(), dlogits.data());
  EXPECT_FLOAT_EQ(loss[0], std::log(2.0f));
  EXPECT_FLOAT_EQ(loss[1], 0.0f);
  // (softmax - onehot) / batch, batch = 2
  EXPECT_FLOAT_EQ(dlogits[0], -0.25f);
  EXPECT_FLOAT_EQ(dlogits[1], 0.25f);
  EXPECT_FLOAT_EQ(dlogits[2], 0.0f);
  EXPECT_FLOAT_EQ(dlogits[3], 0.0f);
}

// Mean softmax cross-entropy over the batch, in double.
double mean_cross_entropy(const std::vector<double>& logits, const std::vector<int>& labels,
                          int classes) {
  const int batch = static_cast<int>(labels.size());
  double total = 0;
  for (int b = 0; b < batch; ++b) {
    double sum = 0;
    for (int j = 0; j < classes; ++j) sum += std::exp(logits[b * classes + j]);
    total += std::log(sum) - logits[b * classes + labels[b]];
  }
  return total / batch;
}

TEST(SoftmaxCrossEntropy, GradientOfTheBatchMeanMatchesFiniteDifferences) {
  const int batch = 6, classes = 10;
  const auto logits = testing::random_floats(batch * classes, 31, -3.0f, 3.0f);
  const std::vector<int> labels = {0, 9, 3, 3, 7, 1};
  std::vector<float> loss(batch), dlogits(logits.size());
  host::softmax_cross_entropy(batch, classes, logits.data(), labels.data(), loss.data(),
                              dlogits.data());

  const auto ld = testing::to_double(logits);
  double mean = 0;
  for (float l : loss) mean += l / batch;
  EXPECT_NEAR(mean, mean_cross_entropy(ld, labels, classes), 1e-5);
  const auto numeric = testing::numerical_gradient(
      [&](const std::vector<double>& v) { return mean_cross_entropy(v, labels, classes); }, ld);
  testing::expect_close("softmax xent dlogits vs finite differences", dlogits, numeric, 1e-6,
                        1e-3);
}

TEST(Top1Correct, TiesCountAsCorrectLikeInTopK) {
  const std::vector<float> logits = {1, 3, 2,   // label 1 is the max: correct
                                     1, 3, 2,   // label 2 is beaten by 3: wrong
                                     2, 2, 0};  // label 0 ties with 1: correct
  const std::vector<int> labels = {1, 2, 0};
  std::vector<float> correct(3);
  host::top1_correct(3, 3, logits.data(), labels.data(), correct.data());
  EXPECT_EQ(correct, (std::vector<float>{1, 0, 1}));
}

}  // namespace
}  // namespace towers

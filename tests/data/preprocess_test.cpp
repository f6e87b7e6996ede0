// SPDX-License-Identifier: MIT
// Tests for preprocess.hpp: the distortions draw from the tutorial's ranges, every image
// comes out standardized, batches are reproducible, and eval preprocessing matches the
// golden batch computed independently in float64.
#include "data/preprocess.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <vector>

#include "data/shapes.hpp"

namespace towers::data {
namespace {

// A test image whose every value says where it came from: (y * 7 + x * 3 + c) mod 256.
std::vector<uint8_t> coordinate_image() {
  std::vector<uint8_t> image(kImageBytes);
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x)
      for (int c = 0; c < 3; ++c)
        image[(y * 32 + x) * 3 + c] = static_cast<uint8_t>(y * 7 + x * 3 + c);
  return image;
}

std::vector<uint8_t> shape_image(int label, uint64_t seed) {
  std::vector<uint8_t> image(kImageBytes);
  Rng rng(seed);
  render_synthetic_image(label, rng, image.data());
  return image;
}

void expect_standardized(const float* image) {
  double sum = 0, squares = 0;
  for (size_t i = 0; i < kCropValues; ++i) sum += image[i];
  const double mean = sum / kCropValues;
  for (size_t i = 0; i < kCropValues; ++i) squares += (image[i] - mean) * (image[i] - mean);
  EXPECT_NEAR(mean, 0.0, 1e-5);
  EXPECT_NEAR(std::sqrt(squares / kCropValues), 1.0, 1e-4);
}

// Binomial bound: a count of n draws with probability p stays within 5 standard deviations.
void expect_binomial(int count, int n, double p) {
  const double sd = std::sqrt(n * p * (1 - p));
  EXPECT_NEAR(count, n * p, 5 * sd) << "count " << count << " of " << n << " at p = " << p;
}

TEST(Preprocess, CropOffsetsCoverZeroToEightUniformly) {
  Rng rng(1);
  constexpr int kDraws = 9000;
  std::vector<int> rows(9), cols(9);
  for (int i = 0; i < kDraws; ++i) {
    const CropOffset o = random_crop_offset(rng);
    ASSERT_TRUE(o.y >= 0 && o.y <= kMaxCropOffset && o.x >= 0 && o.x <= kMaxCropOffset);
    ++rows[o.y], ++cols[o.x];
  }
  for (int v = 0; v <= kMaxCropOffset; ++v) {
    expect_binomial(rows[v], kDraws, 1.0 / 9);
    expect_binomial(cols[v], kDraws, 1.0 / 9);
  }
  EXPECT_EQ(central_crop_offset().y, 4);
  EXPECT_EQ(central_crop_offset().x, 4);
}

TEST(Preprocess, FlipsAboutHalfTheTimeAndColourDrawsStayInRange) {
  Rng rng(2);
  constexpr int kDraws = 2000;
  int flips = 0;
  float min_delta = 1e9f, max_delta = -1e9f, min_factor = 1e9f, max_factor = -1e9f;
  for (int i = 0; i < kDraws; ++i) {
    const Distortion d = draw_distortion(rng);
    flips += d.flip;
    min_delta = std::min(min_delta, d.brightness_delta);
    max_delta = std::max(max_delta, d.brightness_delta);
    min_factor = std::min(min_factor, d.contrast_factor);
    max_factor = std::max(max_factor, d.contrast_factor);
  }
  expect_binomial(flips, kDraws, 0.5);
  EXPECT_GE(min_delta, -63.f);
  EXPECT_LT(max_delta, 63.f);
  EXPECT_LT(min_delta, -60.f);  // the whole range is used
  EXPECT_GT(max_delta, 60.f);
  EXPECT_GE(min_factor, 0.2f);
  EXPECT_LT(max_factor, 1.8f);
  EXPECT_LT(min_factor, 0.25f);
  EXPECT_GT(max_factor, 1.75f);
}

TEST(Preprocess, CropCopiesTheWindowAndFlipMirrorsIt) {
  const std::vector<uint8_t> image = coordinate_image();
  std::vector<float> plain(kCropValues), flipped(kCropValues);
  crop_to_float(image.data(), {3, 5}, false, plain.data());
  crop_to_float(image.data(), {3, 5}, true, flipped.data());
  for (int y = 0; y < 24; ++y)
    for (int x = 0; x < 24; ++x)
      for (int c = 0; c < 3; ++c) {
        const int i = (y * 24 + x) * 3 + c;
        EXPECT_EQ(plain[i], image[((y + 3) * 32 + x + 5) * 3 + c]);
        EXPECT_EQ(flipped[i], image[((y + 3) * 32 + (23 - x) + 5) * 3 + c]);
      }
}

TEST(Preprocess, ContrastKeepsChannelMeansAndScalesDeviations) {
  std::vector<float> image(kCropValues), adjusted;
  const std::vector<uint8_t> source = shape_image(3, 3);
  crop_to_float(source.data(), central_crop_offset(), false, image.data());
  adjusted = image;
  adjust_contrast(adjusted.data(), 1.5f);
  for (int c = 0; c < 3; ++c) {
    double mean = 0, adjusted_mean = 0;
    for (size_t p = 0; p < 576; ++p) mean += image[p * 3 + c], adjusted_mean += adjusted[p * 3 + c];
    mean /= 576, adjusted_mean /= 576;
    EXPECT_NEAR(adjusted_mean, mean, 1e-3);
    EXPECT_NEAR(adjusted[c] - mean, 1.5 * (image[c] - mean), 1e-3);
  }
}

TEST(Preprocess, StandardizedImagesHaveZeroMeanAndUnitStd) {
  std::vector<float> out(kCropValues);
  for (int label = 0; label < kNumClasses; ++label) {
    const std::vector<uint8_t> image = shape_image(label, 100 + label);
    preprocess_for_eval(image.data(), out.data());
    expect_standardized(out.data());
    Rng rng(label);
    distort_for_training(image.data(), rng, out.data());
    expect_standardized(out.data());
  }
}

TEST(Preprocess, FlatImageStandardizesToZerosNotNaN) {
  const std::vector<uint8_t> flat(kImageBytes, 77);
  std::vector<float> out(kCropValues, 1.f);
  preprocess_for_eval(flat.data(), out.data());
  for (float v : out) ASSERT_EQ(v, 0.f);
}

TEST(Preprocess, StandardizationUndoesBrightness) {
  // The facts sheet's note: step 5 removes step 3 exactly.
  const std::vector<uint8_t> image = shape_image(5, 5);
  Distortion d;
  d.offset = {2, 6};
  std::vector<float> plain(kCropValues), brighter(kCropValues);
  apply_distortion(image.data(), d, plain.data());
  d.brightness_delta = 50.f;
  apply_distortion(image.data(), d, brighter.data());
  for (size_t i = 0; i < kCropValues; ++i) ASSERT_NEAR(plain[i], brighter[i], 1e-4) << i;
}

TEST(Preprocess, TrainBatchDependsOnExampleAndEpochNotOnBatchPosition) {
  Dataset data;
  for (int i = 0; i < 8; ++i) {
    data.labels.push_back(static_cast<uint8_t>(i % 10));
    const std::vector<uint8_t> image = shape_image(i % 10, 200 + i);
    data.images.insert(data.images.end(), image.begin(), image.end());
  }
  const std::vector<size_t> first = {7, 3}, second = {1, 7};
  std::vector<float> a(2 * kCropValues), b(2 * kCropValues), c(2 * kCropValues);
  std::vector<int32_t> la(2), lb(2), lc(2);
  fill_batch(data, first, Mode::kTrain, 9, 0, a.data(), la.data());
  fill_batch(data, second, Mode::kTrain, 9, 0, b.data(), lb.data());
  fill_batch(data, second, Mode::kTrain, 9, 1, c.data(), lc.data());
  EXPECT_EQ(la, (std::vector<int32_t>{7, 3}));
  EXPECT_EQ(lb, (std::vector<int32_t>{1, 7}));
  // Example 7: same in both batches of epoch 0, different in epoch 1.
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + kCropValues, b.begin() + kCropValues));
  EXPECT_FALSE(std::equal(a.begin(), a.begin() + kCropValues, c.begin() + kCropValues));
  // Eval mode is the plain eval preprocessing.
  std::vector<float> expected(kCropValues);
  fill_batch(data, first, Mode::kEval, 9, 0, a.data(), la.data());
  preprocess_for_eval(data.image(3), expected.data());
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), a.begin() + kCropValues));
  const std::vector<size_t> out_of_range = {8};
  EXPECT_THROW(fill_batch(data, out_of_range, Mode::kEval, 0, 0, a.data(), la.data()),
               std::out_of_range);
}

TEST(Preprocess, EvalMatchesGoldenBatch) {
  // golden.bin (see tests/golden/manifest.json): input/records, uint8 [4, 3073] at
  // byte 0; input/images, float32 [4, 24, 24, 3] at byte 12308.
  constexpr size_t kBatch = 4, kImagesOffset = 12308;
  std::ifstream in(std::string(TOWERS_GOLDEN_DIR) + "/golden.bin", std::ios::binary);
  ASSERT_TRUE(in) << "missing " << TOWERS_GOLDEN_DIR << "/golden.bin";
  std::vector<uint8_t> records(kBatch * kRecordBytes);
  in.read(reinterpret_cast<char*>(records.data()), static_cast<std::streamsize>(records.size()));
  std::vector<float> golden(kBatch * kCropValues);
  in.seekg(kImagesOffset);
  in.read(reinterpret_cast<char*>(golden.data()), static_cast<std::streamsize>(golden.size() * 4));
  ASSERT_TRUE(in);

  const Dataset data = parse_records(records, "golden.bin");
  std::vector<float> images(kBatch * kCropValues);
  std::vector<int32_t> labels(kBatch);
  const std::vector<size_t> indices = {0, 1, 2, 3};
  fill_batch(data, indices, Mode::kEval, 0, 0, images.data(), labels.data());
  double worst = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const double scale = std::max(1.0, double{std::fabs(golden[i])});
    const double error = std::fabs(images[i] - golden[i]) / scale;
    worst = std::max(worst, error);
  }
  EXPECT_LT(worst, 1e-5) << "largest relative difference from the golden images";
}

}  // namespace
}  // namespace towers::data

// SPDX-License-Identifier: MIT
#include "data/preprocess.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace towers::data {

CropOffset random_crop_offset(Rng& rng) {
  // tf.random_crop: offset = uniform % (32 - 24 + 1) on each axis, so 0..8 inclusive.
  CropOffset offset;
  offset.y = static_cast<int>(rng.below(kMaxCropOffset + 1));
  offset.x = static_cast<int>(rng.below(kMaxCropOffset + 1));
  return offset;
}

CropOffset central_crop_offset() { return {kMaxCropOffset / 2, kMaxCropOffset / 2}; }

Distortion draw_distortion(Rng& rng) {
  Distortion d;
  d.offset = random_crop_offset(rng);
  d.flip = rng.bernoulli(0.5f);
  d.brightness_delta = rng.uniform(-63.f, 63.f);
  d.contrast_factor = rng.uniform(0.2f, 1.8f);
  return d;
}

Rng example_rng(uint64_t seed, uint64_t epoch, uint64_t example_index) {
  return Rng(mix_seed(seed, epoch, example_index));
}

void crop_to_float(const uint8_t* image, CropOffset offset, bool flip, float* out) {
  for (int y = 0; y < kCropSize; ++y) {
    for (int x = 0; x < kCropSize; ++x) {
      const int src_x = offset.x + (flip ? kCropSize - 1 - x : x);
      const uint8_t* src = image + ((offset.y + y) * kImageSize + src_x) * kChannels;
      float* dst = out + (y * kCropSize + x) * kChannels;
      for (int c = 0; c < kChannels; ++c) dst[c] = static_cast<float>(src[c]);
    }
  }
}

void adjust_brightness(float* image, float delta) {
  for (size_t i = 0; i < kCropValues; ++i) image[i] += delta;
}

void adjust_contrast(float* image, float factor) {
  constexpr size_t kPixels = kCropValues / kChannels;
  for (int c = 0; c < kChannels; ++c) {
    double sum = 0;
    for (size_t p = 0; p < kPixels; ++p) sum += image[p * kChannels + c];
    const float mean = static_cast<float>(sum / kPixels);
    for (size_t p = 0; p < kPixels; ++p) {
      float& x = image[p * kChannels + c];
      x = (x - mean) * factor + mean;
    }
  }
}

void standardize(float* image) {
  // Two passes in double: the mean first, then the variance around it, so the result
  // matches a float64 reference to float precision.
  double sum = 0;
  for (size_t i = 0; i < kCropValues; ++i) sum += image[i];
  const double mean = sum / kCropValues;
  double squares = 0;
  for (size_t i = 0; i < kCropValues; ++i) squares += (image[i] - mean) * (image[i] - mean);
  const double stddev = std::sqrt(squares / kCropValues);
  // The floor keeps a flat image (stddev 0) finite, as TF's adjusted_stddev does.
  const double scale = 1.0 / std::max(stddev, 1.0 / std::sqrt(double{kCropValues}));
  for (size_t i = 0; i < kCropValues; ++i)
    image[i] = static_cast<float>((image[i] - mean) * scale);
}

void apply_distortion(const uint8_t* image, const Distortion& distortion, float* out) {
  crop_to_float(image, distortion.offset, distortion.flip, out);
  adjust_brightness(out, distortion.brightness_delta);
  adjust_contrast(out, distortion.contrast_factor);
  standardize(out);
}

void distort_for_training(const uint8_t* image, Rng& rng, float* out) {
  apply_distortion(image, draw_distortion(rng), out);
}

void preprocess_for_eval(const uint8_t* image, float* out) {
  crop_to_float(image, central_crop_offset(), /*flip=*/false, out);
  standardize(out);
}

void fill_batch(const Dataset& data, std::span<const size_t> indices, Mode mode,
                uint64_t seed, uint64_t epoch, float* images, int32_t* labels) {
  for (size_t i = 0; i < indices.size(); ++i) {
    const size_t example = indices[i];
    if (example >= data.size()) {
      throw std::out_of_range("fill_batch: example " + std::to_string(example) +
                              " of a set of " + std::to_string(data.size()));
    }
    float* out = images + i * kCropValues;
    if (mode == Mode::kTrain) {
      Rng rng = example_rng(seed, epoch, example);
      distort_for_training(data.image(example), rng, out);
    } else {
      preprocess_for_eval(data.image(example), out);
    }
    labels[i] = data.labels[example];
  }
}

}  // namespace towers::data

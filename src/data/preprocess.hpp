// SPDX-License-Identifier: MIT
// Preprocessing: the tutorial's training distortions and its eval preprocessing.
//
// Follows cifar10_input.py (facts sheet, section 2). Input is one stored image, 32x32x3
// uint8 HWC; output is 24x24x3 float HWC on the 0-255 scale before standardization.
//   training: random 24x24 crop (offset 0..8 on each axis), horizontal flip with p = 0.5,
//             brightness + delta, delta ~ U[-63, 63) (not clipped), contrast factor
//             f ~ U[0.2, 1.8) around each channel's mean, per-image standardization;
//   eval:     central crop (offset 4, 4), per-image standardization.
// Randomness comes from an Rng per example, seeded from (seed, epoch, example index),
// so a batch is the same whichever thread distorts which image. Every function here is
// reentrant: call it from any thread with distinct outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "data/cifar10.hpp"
#include "data/rng.hpp"

namespace towers::data {

inline constexpr int kCropSize = 24;  ///< IMAGE_SIZE: the model sees 24x24x3 images
/// Values in one preprocessed image: 24 * 24 * 3 = 1728.
inline constexpr size_t kCropValues = size_t{kCropSize} * kCropSize * kChannels;
/// Largest crop offset on each axis: 32 - 24.
inline constexpr int kMaxCropOffset = kImageSize - kCropSize;

/// Training (random distortions) or evaluation (central crop only).
enum class Mode {
  kTrain,  ///< crop, flip, brightness, contrast, standardization (distorted_inputs)
  kEval,   ///< central crop and standardization (inputs)
};

/// Top-left corner of a 24x24 crop inside the 32x32 image.
struct CropOffset {
  int y = 0;  ///< row of the crop's first row, 0 .. kMaxCropOffset
  int x = 0;  ///< column of the crop's first column, 0 .. kMaxCropOffset
};

/// The random choices for one training image, drawn together so tests can inspect them.
struct Distortion {
  CropOffset offset;             ///< where the crop starts
  bool flip = false;             ///< mirror left-right after cropping
  float brightness_delta = 0.f;  ///< added to every value, in [-63, 63)
  float contrast_factor = 1.f;   ///< in [0.2, 1.8)
};

/// Uniform crop offset: each axis independently in 0 .. kMaxCropOffset.
CropOffset random_crop_offset(Rng& rng);

/// The central crop used for evaluation: (4, 4).
CropOffset central_crop_offset();

/// Draws one training distortion, in the tutorial's order: crop, flip, brightness, contrast.
Distortion draw_distortion(Rng& rng);

/// The random stream for one example in one epoch; independent of thread and batch.
Rng example_rng(uint64_t seed, uint64_t epoch, uint64_t example_index);

/// Copies a 24x24 window of a 32x32x3 image to float, mirrored left-right when `flip`.
/// out: [24, 24, 3].
void crop_to_float(const uint8_t* image, CropOffset offset, bool flip, float* out);

/// Adds `delta` to every value of a [24, 24, 3] image (tf.image.adjust_brightness).
void adjust_brightness(float* image, float delta);

/// Per channel: x <- (x - mean_c) * factor + mean_c (tf.image.adjust_contrast).
void adjust_contrast(float* image, float factor);

/// tf.image.per_image_standardization over all 1728 values:
/// (x - mean) / max(stddev, 1 / sqrt(1728)).
void standardize(float* image);

/// Applies a drawn distortion then standardization. out: [24, 24, 3].
void apply_distortion(const uint8_t* image, const Distortion& distortion, float* out);

/// Training preprocessing of one image with a fresh draw from `rng`. out: [24, 24, 3].
void distort_for_training(const uint8_t* image, Rng& rng, float* out);

/// Evaluation preprocessing: central crop, then standardization. out: [24, 24, 3].
void preprocess_for_eval(const uint8_t* image, float* out);

/// Fills one batch from `data`: images [indices.size(), 24, 24, 3] and labels
/// [indices.size()]. In kTrain mode example i is distorted with
/// example_rng(seed, epoch, indices[i]); kEval ignores seed and epoch. Throws
/// std::out_of_range for an index not below data.size() (a bug, not a user error).
void fill_batch(const Dataset& data, std::span<const size_t> indices, Mode mode,
                uint64_t seed, uint64_t epoch, float* images, int32_t* labels);

}  // namespace towers::data

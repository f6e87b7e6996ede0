// SPDX-License-Identifier: MIT
// Shapes: draws one image of the synthetic CIFAR-like set.
//
// Each of the 10 classes is a shape or a texture patch: disc, ring, square, triangle,
// cross, horizontal stripes, vertical stripes, checkerboard, diagonal stripes, x. The
// class lives in the *spatial structure*, not in colour or position, so a model has to
// look at local patterns the way a convolution does:
//   - the shape's centre moves up to 4.5 pixels each way, its half-width varies from 7
//     to 10 pixels, it is stretched by up to 10 % per axis and turned up to 12 degrees,
//     so no fixed pixel template matches a class;
//   - background and shape colours are random and independent (the shape may be darker
//     or brighter), so the average image of every class is the same grey. Only 30 % of
//     shapes take their class's hue: a weak colour hint;
//   - the background has a brightness gradient and a few small clutter marks (dots and
//     short lines), and every value gets noise of a random strength.
// Horizontal flips (a training distortion) never turn one class into another.
// Pure functions of their arguments: reentrant and thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "data/rng.hpp"

namespace towers::data {

/// The name of synthetic class `label` (0-9), e.g. "ring"; "?" for other values.
std::string_view synthetic_class_name(int label);

/// Draws one 32x32x3 HWC image of class `label` (0-9), consuming random numbers from
/// `rng` only. hwc: [32, 32, 3], kImageBytes bytes.
void render_synthetic_image(int label, Rng& rng, uint8_t* hwc);

}  // namespace towers::data

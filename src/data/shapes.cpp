// SPDX-License-Identifier: MIT
#include "data/shapes.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "data/cifar10.hpp"

namespace towers::data {
namespace {

constexpr float kPi = 3.14159265f;
constexpr float kPaletteProbability = 0.3f;  // how often a shape takes its class's hue
constexpr float kMinContrast = 110.f;        // RGB distance between shape and background
constexpr float kMaxTurn = 12.f * kPi / 180.f;

struct Rgb {
  float r, g, b;
};

Rgb random_colour(Rng& rng) {
  return {rng.uniform(0.f, 256.f), rng.uniform(0.f, 256.f), rng.uniform(0.f, 256.f)};
}

// Hue h in [0, 1) (wraps), saturation and value in [0, 1] -> RGB on 0-255.
Rgb from_hsv(float h, float s, float v) {
  h = (h - std::floor(h)) * 6.f;
  const int sector = static_cast<int>(h) % 6;
  const float f = h - std::floor(h);
  const float p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  const std::array<Rgb, 6> by_sector = {
      Rgb{v, t, p}, Rgb{q, v, p}, Rgb{p, v, t}, Rgb{p, q, v}, Rgb{t, p, v}, Rgb{v, p, q}};
  const Rgb c = by_sector[sector];
  return {c.r * 255.f, c.g * 255.f, c.b * 255.f};
}

float distance(Rgb a, Rgb b) {
  return std::sqrt((a.r - b.r) * (a.r - b.r) + (a.g - b.g) * (a.g - b.g) +
                   (a.b - b.b) * (a.b - b.b));
}

// A colour far enough from the background to see; sometimes hinting at the class.
Rgb shape_colour(int label, Rgb background, Rng& rng) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    const Rgb c = rng.bernoulli(kPaletteProbability)
                      ? from_hsv(label / 10.f + rng.uniform(-0.04f, 0.04f),
                                 rng.uniform(0.5f, 1.f), rng.uniform(0.45f, 1.f))
                      : random_colour(rng);
    if (distance(c, background) >= kMinContrast) return c;
  }
  const float luma = 0.3f * background.r + 0.59f * background.g + 0.11f * background.b;
  return luma > 127.f ? Rgb{0, 0, 0} : Rgb{255, 255, 255};
}

// Where a shape sits and how its local coordinates map to pixels.
struct Placement {
  float cx, cy;          // centre, in pixels
  float sx, sy;          // half-width and half-height, in pixels
  float cos_t, sin_t;    // turn
  float period, phase;   // stripe / checker period and offset, in pixels
};

// True when the point at local coordinates (a, b) (shape spans about [-1, 1]) and
// (u, v) (the same point in pixels, for textures of fixed period) is painted.
bool painted(int label, float a, float b, float u, float v, const Placement& p) {
  const float r2 = a * a + b * b;
  const bool in_box = std::fabs(a) <= 0.9f && std::fabs(b) <= 0.9f;
  auto stripe = [&](float w) { return std::fmod(w + p.phase + 64.f, p.period) < p.period / 2; };
  switch (label) {
    case 0: return r2 <= 1.f;                                             // disc
    case 1: return r2 <= 1.f && r2 >= 0.3f;                               // ring
    case 2: return std::fabs(a) <= 0.8f && std::fabs(b) <= 0.8f;          // square
    case 3: return b <= 0.8f && std::fabs(a) <= (b + 0.95f) * 0.55f;      // triangle
    case 4: return (std::fabs(a) <= 0.3f && std::fabs(b) <= 1.f) ||       // cross
                   (std::fabs(b) <= 0.3f && std::fabs(a) <= 1.f);
    case 5: return in_box && stripe(v);                                   // horizontal
    case 6: return in_box && stripe(u);                                   // vertical
    case 7: return in_box && (stripe(u) != stripe(v));                    // checker
    case 8: return in_box && stripe((u + v) * 0.7071f);                   // diagonal
    case 9: return in_box && (std::fabs(a - b) <= 0.4f || std::fabs(a + b) <= 0.4f);  // x
    default: return false;
  }
}

void paint(float* canvas, int x, int y, Rgb c) {
  if (x < 0 || y < 0 || x >= kImageSize || y >= kImageSize) return;
  float* px = canvas + (y * kImageSize + x) * kChannels;
  px[0] = c.r, px[1] = c.g, px[2] = c.b;
}

// A few dots and short lines anywhere, drawn under the shape.
void draw_clutter(float* canvas, Rng& rng) {
  const int marks = 1 + static_cast<int>(rng.below(4));
  for (int m = 0; m < marks; ++m) {
    const Rgb c = random_colour(rng);
    const int x0 = static_cast<int>(rng.below(kImageSize));
    const int y0 = static_cast<int>(rng.below(kImageSize));
    if (rng.bernoulli(0.5f)) {  // dot of 1-3 x 1-3 pixels
      const int w = 1 + static_cast<int>(rng.below(3)), h = 1 + static_cast<int>(rng.below(3));
      for (int y = y0; y < y0 + h; ++y)
        for (int x = x0; x < x0 + w; ++x) paint(canvas, x, y, c);
    } else {  // line of 3-6 pixels in any direction
      const float angle = rng.uniform(0.f, 2 * kPi);
      const int length = 3 + static_cast<int>(rng.below(4));
      for (int i = 0; i < length; ++i)
        paint(canvas, x0 + static_cast<int>(std::lround(i * std::cos(angle))),
              y0 + static_cast<int>(std::lround(i * std::sin(angle))), c);
    }
  }
}

}  // namespace

std::string_view synthetic_class_name(int label) {
  constexpr std::array<std::string_view, kNumClasses> kNames = {
      "disc",      "ring",    "square",   "triangle", "cross",
      "h-stripes", "v-stripes", "checker", "diagonal", "x"};
  return label >= 0 && label < kNumClasses ? kNames[label] : "?";
}

void render_synthetic_image(int label, Rng& rng, uint8_t* hwc) {
  // canvas: [32, 32, 3] float, 0-255 scale; quantized at the end.
  std::array<float, kImageBytes> canvas;
  const Rgb bg = random_colour(rng);
  const float gx = rng.uniform(-2.f, 2.f), gy = rng.uniform(-2.f, 2.f);
  for (int y = 0; y < kImageSize; ++y) {
    for (int x = 0; x < kImageSize; ++x) {
      const float shade = gx * (x - 15.5f) + gy * (y - 15.5f);
      paint(canvas.data(), x, y, {bg.r + shade, bg.g + shade, bg.b + shade});
    }
  }
  draw_clutter(canvas.data(), rng);

  Placement p;
  p.cx = 16.f + rng.uniform(-4.5f, 4.5f);
  p.cy = 16.f + rng.uniform(-4.5f, 4.5f);
  const float size = rng.uniform(7.f, 10.f);
  p.sx = size * rng.uniform(0.9f, 1.1f);
  p.sy = size * rng.uniform(0.9f, 1.1f);
  const float turn = rng.uniform(-kMaxTurn, kMaxTurn);
  p.cos_t = std::cos(turn), p.sin_t = std::sin(turn);
  p.period = rng.uniform(3.5f, 5.5f);
  p.phase = rng.uniform(0.f, p.period);
  const Rgb fg = shape_colour(label, bg, rng);
  for (int y = 0; y < kImageSize; ++y) {
    for (int x = 0; x < kImageSize; ++x) {
      const float dx = x + 0.5f - p.cx, dy = y + 0.5f - p.cy;
      const float u = p.cos_t * dx + p.sin_t * dy, v = -p.sin_t * dx + p.cos_t * dy;
      if (painted(label, u / p.sx, v / p.sy, u, v, p)) paint(canvas.data(), x, y, fg);
    }
  }

  // Noise: triangular on [-amplitude, amplitude), amplitude random per image.
  const float amplitude = rng.uniform(6.f, 24.f);
  for (size_t i = 0; i < kImageBytes; ++i) {
    const float noise = (rng.uniform() + rng.uniform() - 1.f) * amplitude;
    hwc[i] = static_cast<uint8_t>(std::clamp(std::lround(canvas[i] + noise), 0L, 255L));
  }
}

}  // namespace towers::data

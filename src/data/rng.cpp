// SPDX-License-Identifier: MIT
#include "data/rng.hpp"

#include <cmath>

namespace towers::data {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c) {
  // Chain the values through splitmix64 so that (1, 2, 3) and (2, 1, 3) differ.
  uint64_t state = a;
  uint64_t h = splitmix64(state);
  state = h ^ b;
  h = splitmix64(state);
  state = h ^ c;
  return splitmix64(state);
}

Rng::Rng(uint64_t seed) {
  for (uint64_t& word : state_) word = splitmix64(seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

float Rng::uniform() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }

float Rng::uniform(float lo, float hi) {
  const float x = lo + (hi - lo) * uniform();
  // Rounding can land exactly on hi; keep the interval half-open as documented.
  return x < hi ? x : std::nextafter(hi, lo);
}

uint32_t Rng::below(uint32_t n) {
  return static_cast<uint32_t>(((next_u64() >> 32) * static_cast<uint64_t>(n)) >> 32);
}

bool Rng::bernoulli(float p) { return uniform() < p; }

}  // namespace towers::data

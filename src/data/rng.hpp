// SPDX-License-Identifier: MIT
// Rng: a small deterministic random number generator for the data pipeline.
//
// std::uniform_real_distribution and friends are allowed to give different numbers on
// different standard libraries, so the synthetic set and the training distortions use
// this instead: splitmix64 to turn seeds into state, xoshiro256** for the stream. Same
// seed, same numbers, on every compiler and machine.
//
// An Rng is a plain value: copying it forks an identical stream. It is not thread-safe;
// give each thread, or better each example, its own (see mix_seed), so results do not
// depend on which thread ran what.
#pragma once

#include <cstdint>

namespace towers::data {

/// One step of splitmix64: advances `state` and returns a well-mixed 64-bit value.
uint64_t splitmix64(uint64_t& state);

/// Hashes three values into one seed, e.g. (seed, epoch, example index). Different
/// tuples give unrelated streams; the same tuple always gives the same seed.
uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c = 0);

/// xoshiro256** seeded through splitmix64.
class Rng {
 public:
  /// Seeds the stream; every seed (0 included) gives a valid, distinct stream.
  explicit Rng(uint64_t seed);

  /// The next 64 random bits.
  uint64_t next_u64();

  /// Uniform in [0, 1), with 24 random bits (exactly representable as float).
  float uniform();

  /// Uniform in [lo, hi), lo < hi; never returns hi.
  float uniform(float lo, float hi);

  /// Uniform integer in [0, n), n > 0 (multiply-shift; bias below 2^-32 * n).
  uint32_t below(uint32_t n);

  /// True with probability p.
  bool bernoulli(float p);

 private:
  uint64_t state_[4];
};

}  // namespace towers::data

// SPDX-License-Identifier: MIT
// What the graders share: verifiable data for averages, and one-line failure messages.
//
// Every grader failure is one line: what was expected, what happened, and a hint, e.g.
//   expected average[3] == 17 (the exact mean of 4 towers), got 0; hint: ...
// Averages are checked bit for bit on data whose sums are exact in float, as nccl-tests
// checks its collectives: multiples of 1/8, mostly fractional, so that an integer
// accumulator (`auto sum = 0;`) truncates and fails, while any order of float addition
// gives the same exact result.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "exercises/todo.hpp"

namespace towers::exercises {

/// N towers' gradients whose mean is known exactly.
struct ExactMeanData {
  std::vector<std::vector<float>> towers;  ///< [towers][count], multiples of 1/8
  std::vector<float> mean;                 ///< [count], the exact mean of the towers
};

/// True when `mean` survives both ways of averaging N values that sum to N * mean:
/// sum / N and sum * (1 / N). (With N = 7, 21 * (1/7.f) is not 3: we avoid such means,
/// so a solution may divide either way.)
inline bool mean_is_exact_both_ways(float mean, int towers) {
  const float sum = mean * static_cast<float>(towers);
  return sum / static_cast<float>(towers) == mean &&
         sum * (1.0f / static_cast<float>(towers)) == mean;
}

/// Draws `towers` x `count` multiples of 1/8 (seeded) whose per-element mean is a multiple
/// of 1/8 in [-200, 200] that is not an integer, and whose values are fractional too: an
/// integer sum or mean is wrong on every element. Values need at most 14 significant bits,
/// so every partial sum is exact in float, in any order of addition.
inline ExactMeanData make_exact_mean_data(int towers, std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> mean_of(-1600, 1600), offset_of(-16, 16);
  const auto eighths = [](int k) { return static_cast<float>(k) / 8.0f; };
  ExactMeanData data;
  data.towers.assign(towers, std::vector<float>(count));
  data.mean.resize(count);
  for (std::size_t j = 0; j < count; ++j) {
    float mean = 0;
    int k = 0;
    do k = mean_of(rng);
    while (k % 8 == 0 || !mean_is_exact_both_ways(eighths(k), towers));
    mean = eighths(k);
    int offsets_sum = 0;  // in eighths; each offset a multiple of 8, so values stay fractional
    for (int t = 0; t + 1 < towers; ++t) {
      const int offset = 8 * offset_of(rng);
      offsets_sum += offset;
      data.towers[t][j] = eighths(k + offset);
    }
    data.towers[towers - 1][j] = eighths(k - offsets_sum);
    data.mean[j] = mean;
  }
  return data;
}

/// Index of the first element where `got` and `expected` differ (bit for bit), or of the
/// first missing/extra element when their sizes differ; nullopt when they are equal.
inline std::optional<std::size_t> first_mismatch(std::span<const float> got,
                                                 std::span<const float> expected) {
  const std::size_t n = got.size() < expected.size() ? got.size() : expected.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (got[i] != expected[i]) return i;
  }
  if (got.size() != expected.size()) return n;
  return std::nullopt;
}

/// "got[i] (expected e)" text for a failure line; handles sizes that differ.
inline std::string describe_mismatch(std::span<const float> got, std::span<const float> expected,
                                     std::size_t i) {
  std::ostringstream out;
  if (got.size() != expected.size()) {
    out << got.size() << " elements where " << expected.size() << " were expected";
  } else {
    out << "element " << i << " = " << got[i] << " where " << expected[i] << " was expected";
  }
  return out.str();
}

/// Calls `call` and expects std::invalid_argument (or a subclass); any other outcome is one
/// failure line saying what `call` was given (`input`) and what to do (`hint`).
template <typename Call>
void expect_invalid_argument(Call&& call, const std::string& input, const std::string& hint) {
  try {
    call();
  } catch (const std::invalid_argument&) {
    return;
  } catch (const NotImplemented& e) {
    ADD_FAILURE() << "expected std::invalid_argument for " << input << ", got an unfinished "
                  << "TODO: " << e.what() << "; hint: " << hint;
    return;
  } catch (const std::exception& e) {
    // The check itself ran: what is wrong is the type, and the hint says so.
    ADD_FAILURE() << "expected std::invalid_argument for " << input << ", got another "
                  << "exception type: " << e.what() << "; hint: throw std::invalid_argument "
                  << "(a wrong argument), the type the interface promises and callers catch";
    return;
  }
  ADD_FAILURE() << "expected std::invalid_argument for " << input
                << ", got a normal return; hint: " << hint;
}

// A buffer between Guard cells on each side that nothing may write: guards_intact() says
// whether a solution wrote outside the part it was given. Each grader picks Guard.
template <std::size_t Guard>
class GuardedBuffer {
 public:
  static constexpr float kGuardValue = 3.0e37f;  // no value of the data comes near it

  explicit GuardedBuffer(std::size_t size, float fill = -7.0f) : cells_(Guard, kGuardValue) {
    cells_.insert(cells_.end(), size, fill);
    cells_.insert(cells_.end(), Guard, kGuardValue);
  }
  explicit GuardedBuffer(const std::vector<float>& values) : GuardedBuffer(values.size()) {
    assign(values);
  }
  float* data() { return cells_.data() + Guard; }
  const float* data() const { return cells_.data() + Guard; }
  std::size_t size() const { return cells_.size() - 2 * Guard; }
  std::vector<float> values() const {
    return std::vector<float>(cells_.begin() + Guard, cells_.end() - Guard);
  }
  void assign(const std::vector<float>& values) { std::copy(values.begin(), values.end(), data()); }
  bool guards_intact() const {
    const auto same = [](float v) { return std::memcmp(&v, &kGuardValue, sizeof v) == 0; };
    return std::all_of(cells_.begin(), cells_.begin() + Guard, same) &&
           std::all_of(cells_.end() - Guard, cells_.end(), same);
  }

 private:
  std::vector<float> cells_;
};

}  // namespace towers::exercises

// SPDX-License-Identifier: MIT
// Grader of exercise 09: ZeRO-1's sharded update. Each test is one point.
//
// The grader is the collectives: sharded_step() calls its reduce_scatter() and
// all_gather(), which record what they were given and the parameters and moving averages
// of every tower at that moment, then move the data as the ring does (the mean into each
// owner's shard, partial sums elsewhere; every shard to every tower). What is checked is
// that record and the towers' buffers, against an unsharded oracle (chapter 4's update of
// the whole buffer) and the grader's own shard layout, written here, never shard_of()'s.
// The gradients have exact means (grader.hpp), so every result is compared bit for bit.
// Every buffer has guard cells on both sides: a write past a shard's end shows, in any
// build, as a changed guard.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "exercises/grader.hpp"
#include "sharded_update.hpp"

namespace towers::exercises {
namespace {

// The shard the grader's reduce-scatter leaves tower `tower`'s mean in: ring chunk
// (tower + 1) mod N, the first count % N chunks one element longer.
Shard owned(std::size_t count, int towers, int tower) {
  const std::size_t n = static_cast<std::size_t>(towers);
  const std::size_t c = (static_cast<std::size_t>(tower) + 1) % n;
  const std::size_t base = count / n, longer = count % n;
  return Shard{c * base + std::min(c, longer), base + (c < longer ? 1 : 0)};
}

std::string towers_text(int n) { return std::to_string(n) + (n == 1 ? " tower" : " towers"); }

std::string range(const Shard& s) {
  return "[" + std::to_string(s.offset) + ", " + std::to_string(s.offset + s.size) + ")";
}

// A tower's buffer between 64 guard cells on each side that nothing may write.
using Guarded = GuardedBuffer<64>;

// One call of the collectives, as the grader saw it.
struct Call {
  bool reduce_scatter = false;  // else all_gather
  std::string buffers;          // "gradients", "parameters" or what else it was given
  std::size_t count = 0;
  std::vector<std::vector<float>> params;    // [tower] the parameters when it was called
  std::vector<std::vector<float>> averages;  // [tower] the moving averages then
};

// N towers, their buffers, the collectives that watch them and the unsharded oracle.
class World final : public Collectives {
 public:
  World(int towers, std::size_t count, std::uint64_t seed) : n_(towers), count_(count) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> eighths(-800, 800);
    std::vector<float> params(count), averages(count);
    for (std::size_t j = 0; j < count; ++j) {
      params[j] = static_cast<float>(eighths(rng)) / 8.0f;
      averages[j] = params[j] + static_cast<float>(eighths(rng)) / 64.0f;  // not yet equal
    }
    for (int r = 0; r < n_; ++r) {
      const Shard s = owned(count, n_, r);
      params_.emplace_back(params);
      grads_.emplace_back(std::vector<float>(count, 0.0f));
      averages_.emplace_back(std::vector<float>(averages.begin() + static_cast<long>(s.offset),
                                                averages.begin() + static_cast<long>(s.offset + s.size)));
    }
    oracle_params_ = params;
    oracle_averages_ = averages;
  }

  // One step: new gradients with exact means (seeded), sharded_step(), then the oracle's
  // unsharded step. Throws whatever sharded_step() throws (the stub's NotImplemented).
  void step(float learning_rate, float decay, std::uint64_t seed) {
    const ExactMeanData data = make_exact_mean_data(n_, count_, seed);
    for (int r = 0; r < n_; ++r) grads_[r].assign(data.towers[r]);
    own_grads_ = data.towers;
    mean_ = data.mean;
    lr_ = learning_rate;
    params_before_ = params_of_towers();
    averages_before_ = averages_of_towers();
    calls_.clear();
    std::vector<ShardedTower> towers;
    for (int r = 0; r < n_; ++r) towers.push_back({params_[r].data(), grads_[r].data(), averages_[r].data()});
    sharded_step(*this, towers, count_, learning_rate, decay);
    sgd(count_, learning_rate, mean_.data(), oracle_params_.data());
    moving_average(count_, decay, oracle_params_.data(), oracle_averages_.data());
  }

  void reduce_scatter(std::span<float* const> buffers, std::size_t count) override {
    record(true, buffers, count);
    if (!known(buffers, count)) return;
    std::vector<std::vector<float>> before;
    for (float* b : buffers) before.emplace_back(b, b + count);
    for (int r = 0; r < n_; ++r) {
      const Shard s = owned(count, n_, r);
      const int left = (r + n_ - 1) % n_;
      for (std::size_t j = 0; j < count; ++j) {
        if (j >= s.offset && j < s.offset + s.size) {
          float sum = 0;  // exact in float, in any order (grader.hpp)
          for (int t = 0; t < n_; ++t) sum += before[t][j];
          buffers[r][j] = sum / static_cast<float>(n_);
        } else if (n_ > 1) {
          buffers[r][j] = before[r][j] + before[left][j];  // a partial sum, as the ring leaves
        }
      }
    }
  }

  void all_gather(std::span<float* const> buffers, std::size_t count) override {
    record(false, buffers, count);
    if (!known(buffers, count)) return;
    for (int s = 0; s < n_; ++s) {
      const Shard shard = owned(count, n_, s);
      for (int r = 0; r < n_; ++r) {
        if (r != s) std::copy_n(buffers[s] + shard.offset, shard.size, buffers[r] + shard.offset);
      }
    }
  }

  // A resume between two steps: every tower's moving averages, and the oracle's, replaced
  // by new values (seeded), as --resume loads them from a checkpoint into the same buffers.
  void load_averages(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> offset(-800, 800);
    for (std::size_t j = 0; j < count_; ++j) {
      oracle_averages_[j] = oracle_params_[j] + static_cast<float>(offset(rng)) / 64.0f;
    }
    for (int r = 0; r < n_; ++r) {
      const Shard s = owned(count_, n_, r);
      const auto first = oracle_averages_.begin() + static_cast<long>(s.offset);
      averages_[r].assign(std::vector<float>(first, first + static_cast<long>(s.size)));
    }
  }

  int towers() const { return n_; }
  std::size_t count() const { return count_; }
  const std::vector<Call>& calls() const { return calls_; }
  // The first call of one kind, or null.
  const Call* first_call(bool reduce_scatter) const {
    for (const Call& c : calls_) {
      if (c.reduce_scatter == reduce_scatter) return &c;
    }
    return nullptr;
  }
  std::vector<std::vector<float>> params_of_towers() const {
    std::vector<std::vector<float>> out;
    for (const Guarded& g : params_) out.push_back(g.values());
    return out;
  }
  std::vector<std::vector<float>> averages_of_towers() const {
    std::vector<std::vector<float>> out;
    for (const Guarded& g : averages_) out.push_back(g.values());
    return out;
  }
  const std::vector<float>& oracle_params() const { return oracle_params_; }
  const std::vector<float>& oracle_averages() const { return oracle_averages_; }
  const std::vector<std::vector<float>>& params_before() const { return params_before_; }
  const std::vector<std::vector<float>>& averages_before() const { return averages_before_; }
  // True when something was written just outside tower r's moving averages.
  bool averages_guard_written(int r) const { return !averages_[r].guards_intact(); }
  // Which buffer's guard cells were written, or "" when none was.
  std::string written_guard() const {
    for (int r = 0; r < n_; ++r) {
      if (!params_[r].guards_intact()) return "tower " + std::to_string(r) + "'s parameters";
      if (!grads_[r].guards_intact()) return "tower " + std::to_string(r) + "'s gradients";
      if (!averages_[r].guards_intact()) return "tower " + std::to_string(r) + "'s moving averages";
    }
    return "";
  }

  // What parameter j of tower r, updated before the gather, tells of the likely mistake.
  std::string diagnose(int r, std::size_t j, float got) const {
    const float before = params_before_[r][j];
    const float n = static_cast<float>(n_);
    if (got == before) {
      return "it was not updated before the all-gather: update between reduce_scatter() and "
             "all_gather(), so that the gather sends the updated shard";
    }
    if (got == before - lr_ * own_grads_[r][j]) {
      return "that is the update from the tower's own gradient: reduce-scatter first, then "
             "read the mean the reduce-scatter left in the tower's gradients";
    }
    if (got == before - (lr_ / n) * mean_[j] || got == before - (lr_ * n) * mean_[j]) {
      return "the learning rate was scaled by N: the reduce-scatter leaves the mean, not the "
             "sum, so use learning_rate as given";
    }
    return "update the tower's own shard with sgd(size, learning_rate, grads + offset, "
           "params + offset) after the reduce-scatter";
  }

 private:
  void record(bool reduce_scatter, std::span<float* const> buffers, std::size_t count) {
    Call call{reduce_scatter, what(buffers), count, params_of_towers(), averages_of_towers()};
    calls_.push_back(std::move(call));
  }
  // "gradients" or "parameters" when buffers are every tower's, in tower order.
  std::string what(std::span<float* const> buffers) {
    const auto all = [&](std::vector<Guarded>& mine) {
      if (buffers.size() != mine.size()) return false;
      for (std::size_t r = 0; r < mine.size(); ++r) {
        if (buffers[r] != mine[r].data()) return false;
      }
      return true;
    };
    if (all(grads_)) return "gradients";
    if (all(params_)) return "parameters";
    return std::to_string(buffers.size()) + " buffers that are not every tower's gradients or "
           "parameters in tower order";
  }
  bool known(std::span<float* const> buffers, std::size_t count) {
    const std::string w = what(buffers);
    return count == count_ && (w == "gradients" || w == "parameters");
  }

  int n_;
  std::size_t count_;
  std::vector<Guarded> params_, grads_, averages_;
  std::vector<Call> calls_;
  std::vector<std::vector<float>> own_grads_, params_before_, averages_before_;
  std::vector<float> mean_, oracle_params_, oracle_averages_;
  float lr_ = 0;
};

struct Shape {
  int towers;
  std::size_t count;
};
// N dividing the count and not, one tower, and fewer elements than towers.
const Shape kShapes[] = {{1, 7}, {2, 10}, {3, 10}, {4, 4}, {4, 7}, {5, 3}, {8, 37}};
constexpr float kLearningRate = 0.1f, kDecay = 0.9f;

std::string where(const World& w) {
  return towers_text(w.towers()) + ", " + std::to_string(w.count()) + " parameters";
}

// "" when every tower's parameters, and the towers' shards of the moving averages put
// together, equal the unsharded oracle's; else the first difference.
std::string differs_from_oracle(const World& w) {
  const auto params = w.params_of_towers();
  for (int r = 0; r < w.towers(); ++r) {
    if (const auto bad = first_mismatch(params[r], w.oracle_params())) {
      return "tower " + std::to_string(r) + "'s parameters: " +
             describe_mismatch(params[r], w.oracle_params(), *bad);
    }
  }
  std::vector<float> gathered(w.count());
  const auto averages = w.averages_of_towers();
  for (int r = 0; r < w.towers(); ++r) {
    const Shard mine = owned(w.count(), w.towers(), r);
    std::copy(averages[r].begin(), averages[r].end(),
              gathered.begin() + static_cast<long>(mine.offset));
  }
  if (const auto bad = first_mismatch(gathered, w.oracle_averages())) {
    return "the towers' moving averages, put together: " +
           describe_mismatch(gathered, w.oracle_averages(), *bad);
  }
  return "";
}

// --- shard_of ---------------------------------------------------------------------------

const std::size_t kCounts[] = {1, 2, 3, 5, 7, 8, 10, 13, 64, 100, 1001};

TEST(ShardOf, TilesTheBufferEachElementOwnedOnce) {
  for (int n = 1; n <= 8; ++n) {
    for (std::size_t count : kCounts) {
      std::vector<int> owners(count, 0);
      std::string outside;
      for (int r = 0; r < n; ++r) {
        const Shard s = shard_of(count, n, r);
        if (s.offset > count || s.size > count - s.offset) {
          outside = "tower " + std::to_string(r) + "'s shard " + range(s) + " ends past " +
                    std::to_string(count);
          continue;
        }
        for (std::size_t j = s.offset; j < s.offset + s.size; ++j) ++owners[j];
      }
      ASSERT_EQ(outside, "") << "with " << towers_text(n) << " and " << count << " elements, "
                             << outside << "; hint: the last chunk ends at count";
      const auto wrong = std::find_if(owners.begin(), owners.end(), [](int o) { return o != 1; });
      ASSERT_TRUE(wrong == owners.end())
          << "expected every element owned by exactly one tower, but with " << towers_text(n)
          << " and " << count << " elements element " << (wrong - owners.begin()) << " is owned by "
          << *wrong << "; hint: " << (*wrong == 0 ? "a shard owned by none: " : "a shard owned by two: ")
          << "chunk c starts where chunk c-1 ends, at c * (count / N) + min(c, count % N)";
    }
  }
}

TEST(ShardOf, SizesDifferByAtMostOneElement) {
  for (int n = 1; n <= 8; ++n) {
    for (std::size_t count : kCounts) {
      std::size_t smallest = count, largest = 0;
      for (int r = 0; r < n; ++r) {
        smallest = std::min(smallest, shard_of(count, n, r).size);
        largest = std::max(largest, shard_of(count, n, r).size);
      }
      ASSERT_LE(largest - std::min(largest, smallest), 1u)
          << "with " << towers_text(n) << " and " << count << " elements the shards hold " << smallest
          << " to " << largest << " elements; hint: spread the count % N elements left over one "
          << "each over the first chunks, not all onto one tower";
    }
  }
}

TEST(ShardOf, IsTheRangeTheReduceScatterLeavesTheMeanIn) {
  for (int n = 1; n <= 8; ++n) {
    for (std::size_t count : kCounts) {
      for (int r = 0; r < n; ++r) {
        const Shard got = shard_of(count, n, r), expected = owned(count, n, r);
        ASSERT_TRUE(got.offset == expected.offset && got.size == expected.size)
            << "expected tower " << r << " of " << n << " to own " << range(expected) << " of "
            << count << " elements, got " << range(got) << "; hint: tower r owns ring chunk "
            << "(r + 1) mod N (the one its last reduce-scatter step completes, exercise 03), and "
            << "the first count % N chunks are one element longer";
      }
    }
  }
}

// --- sharded_step: the collectives and the data they see ----------------------------------

TEST(ShardedStep, ReduceScattersTheGradientsThenAllGathersTheParameters) {
  for (const auto [n, count] : kShapes) {
    World w(n, count, 11);
    w.step(kLearningRate, kDecay, 12);
    std::ostringstream calls;
    for (const Call& c : w.calls()) {
      calls << (c.reduce_scatter ? "reduce_scatter(" : "all_gather(") << c.buffers << ", "
            << c.count << ") ";
    }
    const auto& log = w.calls();
    const bool right = log.size() == 2 && log[0].reduce_scatter && log[0].buffers == "gradients" &&
                       log[0].count == count && !log[1].reduce_scatter &&
                       log[1].buffers == "parameters" && log[1].count == count;
    EXPECT_TRUE(right) << "with " << where(w) << " expected reduce_scatter(gradients, " << count
                       << ") then all_gather(parameters, " << count << "), got " << calls.str()
                       << "; hint: ZeRO-1 gathers the updated parameters, not the gradients, "
                          "once each, every tower's buffer in tower order";
  }
}

TEST(ShardedStep, NothingIsUpdatedBeforeTheReduceScatter) {
  for (const auto [n, count] : kShapes) {
    World w(n, count, 21);
    w.step(kLearningRate, kDecay, 22);
    const Call* rs = w.first_call(true);
    ASSERT_NE(rs, nullptr) << "with " << where(w) << " reduce_scatter() was never called; hint: "
                           << "the update reads the mean gradients, which it leaves";
    EXPECT_TRUE(rs->params == w.params_before() && rs->averages == w.averages_before())
        << "with " << where(w) << " the parameters or moving averages had changed when "
        << "reduce_scatter() was called; hint: updating before the reduce-scatter uses the "
        << "tower's own gradients, not the mean of all towers'";
  }
}

TEST(ShardedStep, BeforeTheGatherEachTowerHasChangedOnlyItsShard) {
  for (const auto [n, count] : kShapes) {
    World w(n, count, 31);
    w.step(kLearningRate, kDecay, 32);
    const Call* ag = w.first_call(false);
    ASSERT_NE(ag, nullptr) << "with " << where(w) << " all_gather() was never called; hint: "
                           << "without it each tower keeps only its own shard up to date";
    for (int r = 0; r < n; ++r) {
      const Shard mine = owned(count, n, r);
      for (std::size_t j = 0; j < count; ++j) {
        if (j >= mine.offset && j < mine.offset + mine.size) continue;
        ASSERT_EQ(ag->params[r][j], w.params_before()[r][j])
            << "with " << where(w) << ", when all_gather() was called tower " << r
            << " had changed parameter " << j << ", outside its shard " << range(mine)
            << "; hint: each tower updates only its own shard (its gradients hold partial sums "
            << "elsewhere, and the all-gather brings the other shards): no shard owned by two, "
            << "no whole-buffer update, no loop past the shard's end";
      }
    }
  }
}

TEST(ShardedStep, BeforeTheGatherEachShardHoldsItsUpdateFromTheMean) {
  for (const auto [n, count] : kShapes) {
    World w(n, count, 41);
    w.step(kLearningRate, kDecay, 42);
    const Call* ag = w.first_call(false);
    ASSERT_NE(ag, nullptr) << "with " << where(w) << " all_gather() was never called; hint: "
                           << "the all-gather sends every tower's updated shard to the others";
    for (int r = 0; r < n; ++r) {
      const Shard mine = owned(count, n, r);
      for (std::size_t j = mine.offset; j < mine.offset + mine.size; ++j) {
        const float got = ag->params[r][j], expected = w.oracle_params()[j];
        ASSERT_EQ(got, expected) << "with " << where(w) << ", when all_gather() was called tower "
                                 << r << "'s parameter " << j << " (its shard " << range(mine)
                                 << ") was " << got << ", expected " << expected << "; hint: "
                                 << w.diagnose(r, j, got);
      }
    }
  }
}

TEST(ShardedStep, KeepsTheMovingAveragesOfItsShardOnly) {
  for (const auto [n, count] : kShapes) {
    World w(n, count, 51);
    w.step(kLearningRate, kDecay, 52);
    const auto averages = w.averages_of_towers();
    for (int r = 0; r < n; ++r) {
      const Shard mine = owned(count, n, r);
      for (std::size_t j = 0; j < mine.size; ++j) {
        const float got = averages[r][j], expected = w.oracle_averages()[mine.offset + j];
        std::string hint = "averages[j] is the average of parameter shard.offset + j: pass "
                           "tower.averages itself, not tower.averages + offset";
        if (w.averages_guard_written(r)) {
          hint = "something was written past the end of the averages: they hold the shard "
                 "only, so averages[j] is parameter shard.offset + j (pass tower.averages, "
                 "not tower.averages + offset)";
        } else if (got == w.averages_before()[r][j]) {
          hint = "the moving averages were not updated: call moving_average() on the shard";
        } else {
          std::vector<float> old_params(w.params_before()[r].begin() + static_cast<long>(mine.offset),
                                        w.params_before()[r].begin() + static_cast<long>(mine.offset + mine.size));
          std::vector<float> from_old = w.averages_before()[r];
          moving_average(mine.size, kDecay, old_params.data(), from_old.data());
          if (got == from_old[j]) {
            hint = "the averages moved toward the parameters before sgd(): update the "
                   "parameters first, then their moving averages";
          }
        }
        ASSERT_EQ(got, expected) << "with " << where(w) << " tower " << r << "'s moving average "
                                 << j << " (of parameter " << mine.offset + j << ") is " << got
                                 << ", expected " << expected << "; hint: " << hint;
      }
    }
  }
}

TEST(ShardedStep, WritesNothingOutsideItsBuffers) {
  for (const auto [n, count] : kShapes) {
    World w(n, count, 61);
    w.step(kLearningRate, kDecay, 62);
    EXPECT_EQ(w.written_guard(), "")
        << "with " << where(w) << " something was written just outside " << w.written_guard()
        << "; hint: a loop past its shard's end (j < size, not <=), or the moving averages "
        << "indexed by parameter (they hold the shard only, from index 0)";
  }
}

TEST(ShardedStep, WorksWithFewerElementsThanTowers) {
  for (const Shape shape : {Shape{2, 1}, Shape{5, 3}, Shape{8, 1}, Shape{8, 7}}) {
    World w(shape.towers, shape.count, 71);
    w.step(kLearningRate, kDecay, 72);
    const auto params = w.params_of_towers();
    for (int r = 0; r < shape.towers; ++r) {
      const auto bad = first_mismatch(params[r], w.oracle_params());
      ASSERT_FALSE(bad.has_value())
          << "with " << where(w) << " tower " << r << "'s parameters: "
          << describe_mismatch(params[r], w.oracle_params(), *bad)
          << "; hint: with count < N some towers own an empty shard (size 0): they update "
          << "nothing, and still take part in both collectives";
    }
    EXPECT_EQ(w.written_guard(), "") << "with " << where(w) << " a write outside "
                                     << w.written_guard() << "; hint: an empty shard has size 0";
  }
}

// --- no state kept from one call to the next --------------------------------------------
// A program may step two models of one shape (two runs side by side, a copy for
// evaluation), and a resume loads the moving averages from a checkpoint into the towers'
// buffers between two steps. Either way each call must read what it is given: a copy of the
// averages kept from an earlier call (a `static` buffer) updates the wrong model's.

constexpr char kNoStateHint[] =
    "read every tower's moving averages from tower.averages on every call and keep nothing "
    "between calls (no static buffer of the averages, whole or per shard): the caller owns "
    "the state";

TEST(ShardedStep, KeepsNoStateBetweenCalls) {
  for (const auto [n, count] : {Shape{4, 10}, Shape{3, 7}}) {
    World a(n, count, 101), b(n, count, 102);  // one shape, other values
    a.step(kLearningRate, kDecay, 103);
    const std::string first = differs_from_oracle(a);
    ASSERT_EQ(first, "") << "with " << where(a) << ", model A's first step: " << first
                         << "; hint: reduce-scatter, update the shard, all-gather";
    b.step(kLearningRate, kDecay, 104);
    const std::string other = differs_from_oracle(b);
    ASSERT_EQ(other, "") << "with " << where(b) << ", a second model B of the same shape, "
                         << "stepped after model A: " << other << "; hint: " << kNoStateHint;
    a.step(0.05f, 0.99f, 105);
    const std::string back = differs_from_oracle(a);
    ASSERT_EQ(back, "") << "with " << where(a) << ", model A's second step, after model B's: "
                        << back << "; hint: " << kNoStateHint;
    a.load_averages(106);  // a resume: the same buffers, other averages
    a.step(0.025f, 0.5f, 107);
    const std::string resumed = differs_from_oracle(a);
    ASSERT_EQ(resumed, "") << "with " << where(a) << ", the step after the moving averages "
                           << "were loaded into the towers' buffers (as a resume does): "
                           << resumed << "; hint: " << kNoStateHint;
  }
}

// --- several steps on 1 to 8 towers --------------------------------------------------------

class ShardedStepOnNTowers : public ::testing::TestWithParam<int> {};

// Three steps, each with new gradients, learning rate and decay: every tower's parameters,
// and the towers' shards of the moving averages put together, are the unsharded update's.
TEST_P(ShardedStepOnNTowers, ThreeStepsEndWithTheUnshardedParametersAndAverages) {
  const int n = GetParam();
  const std::size_t count = n == 1 ? 10 : 9 * static_cast<std::size_t>(n) + (n + 1) / 2;  // N does not divide
  World w(n, count, 80 + static_cast<std::uint64_t>(n));
  const float rates[] = {0.1f, 0.05f, 0.025f}, decays[] = {0.9f, 0.99f, 0.5f};
  for (int step = 0; step < 3; ++step) {
    w.step(rates[step], decays[step], 90 + static_cast<std::uint64_t>(step));
    const auto params = w.params_of_towers();
    for (int r = 0; r < n; ++r) {
      const auto bad = first_mismatch(params[r], w.oracle_params());
      ASSERT_FALSE(bad.has_value())
          << "after step " << step << " with " << where(w) << " tower " << r << "'s parameters: "
          << describe_mismatch(params[r], w.oracle_params(), *bad)
          << "; hint: reduce-scatter, update the shard shard_of() gives, all-gather the "
          << "parameters, every step";
    }
    std::vector<float> gathered(count);
    const auto averages = w.averages_of_towers();
    for (int r = 0; r < n; ++r) {
      const Shard mine = owned(count, n, r);
      std::copy(averages[r].begin(), averages[r].end(), gathered.begin() + static_cast<long>(mine.offset));
    }
    const auto bad = first_mismatch(gathered, w.oracle_averages());
    ASSERT_FALSE(bad.has_value())
        << "after step " << step << " with " << where(w) << " the towers' moving averages, put "
        << "together: " << describe_mismatch(gathered, w.oracle_averages(), *bad)
        << "; hint: every step each tower moves its shard's averages toward its updated shard";
  }
  EXPECT_EQ(w.written_guard(), "") << "a write outside " << w.written_guard();
}

INSTANTIATE_TEST_SUITE_P(Towers, ShardedStepOnNTowers, ::testing::Range(1, 9),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

}  // namespace
}  // namespace towers::exercises

// SPDX-License-Identifier: MIT
// Grader of exercise 03: the ring all-reduce on host buffers. Each test is one point.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "exercises/grader.hpp"
#include "ring_allreduce.hpp"

namespace towers::exercises {
namespace {

int wrap(int index, int n) { return ((index % n) + n) % n; }

// The hint for a transfer that differs from the schedule, by what differs first: the
// neighbour, then add-or-copy (which phase), then the chunk.
std::string transfer_hint(bool from_right, bool reduce_right, bool expected_reduce) {
  if (!from_right) return "the ring runs one way: tower r receives from r-1 (wrapping around)";
  if (!reduce_right) {
    return expected_reduce ? "the first N-1 steps (the reduce-scatter) add the received chunk in"
                           : "after N-1 reduce-scatter steps the all-gather copies the received "
                             "chunk (no more adding), for N-1 steps";
  }
  return "at step s tower r receives chunk r-1-s in the reduce-scatter and r-s in the "
         "all-gather (mod N); see the schedule in ring_allreduce.hpp";
}

// 1003 = 17 * 59: not divisible by any tower count from 2 to 8, so chunks differ in size.
constexpr std::size_t kCount = 1003;

// Follows the schedule beside the student's ring, on the data itself, never trusting the
// reports alone: it keeps its own copy of every buffer (the model) and applies to it each
// reported transfer, after checking that it is the scheduled one. After each report the
// receiver's chunk in the student's buffers must equal the model's (the partial sum in the
// reduce-scatter, the mean in the all-gather); after each step of N reports, every buffer
// must. So averaging elsewhere and replaying the reports, reporting before moving, or
// moving anything but the reported chunk all fail at the first transfer they touch.
class RingChecker {
 public:
  RingChecker(const std::vector<std::vector<float>>& start, std::size_t count)
      : model_(start), n_(static_cast<int>(start.size())), count_(count) {}

  // The Ring::on_transfer of the student's ring; `ring` is that ring, read at each report.
  void on_transfer(const Ring& ring, const Transfer& t) {
    const std::size_t i = reports_++;
    if (!failure_.empty()) return;
    const int g = static_cast<int>(i) / n_;  // the step this report belongs to
    if (g >= 2 * (n_ - 1)) return fail("expected 2(N-1) = " + std::to_string(2 * (n_ - 1)) +
                                       " steps of N = " + std::to_string(n_) + " transfers, got "
                                       "more transfers", "stop after N-1 steps of each phase");
    const bool reduce = g < n_ - 1;
    const int s = reduce ? g : g - (n_ - 1);
    if (i % n_ == 0) received_.assign(n_, false);  // a new step
    if (t.to < 0 || t.to >= n_ || received_[t.to]) {
      return fail("expected step " + std::to_string(g) + " to move one chunk into every tower, "
                  "got transfer " + std::to_string(i) + " into tower " + std::to_string(t.to),
                  "one transfer per tower per step, every tower r receiving from r-1");
    }
    received_[t.to] = true;
    const int chunk = reduce ? wrap(t.to - 1 - s, n_) : wrap(t.to - s, n_);
    if (t.from != wrap(t.to - 1, n_) || t.reduce != reduce || t.chunk != chunk) {
      return fail("expected transfer " + std::to_string(i) + " (step " + std::to_string(g) +
                  ") to move chunk " + std::to_string(chunk) + " from tower " +
                  std::to_string(wrap(t.to - 1, n_)) + " to tower " + std::to_string(t.to) +
                  (reduce ? ", added" : ", copied") + ", got chunk " + std::to_string(t.chunk) +
                  " from tower " + std::to_string(t.from) + (t.reduce ? ", added" : ", copied"),
                  transfer_hint(t.from == wrap(t.to - 1, n_), t.reduce == reduce, reduce));
    }
    if (!reduce && !scaled_) scale_owned_chunks();
    const Chunk c = ring_chunk(count_, n_, chunk);
    for (std::size_t j = c.offset; j < c.offset + c.size; ++j) {
      const float moved = model_[t.from][j];
      model_[t.to][j] = reduce ? model_[t.to][j] + moved : moved;
    }
    if (ring.towers() != n_ || ring.buffers[t.to].size() != count_) {
      return fail("expected " + std::to_string(n_) + " buffers of " + std::to_string(count_) +
                  " elements during the all-reduce, got another shape",
                  "work in place on ring.buffers");
    }
    for (std::size_t j = c.offset; j < c.offset + c.size; ++j) {
      if (ring.buffers[t.to][j] != model_[t.to][j]) {
        return fail(describe(ring, i, g, t.to, j, reduce ? "the partial sum it just received"
                                                         : "the mean it just received"),
                    reduce ? "move the chunk's data, then report it: the grader reads the "
                             "receiver's chunk at every report (average nowhere else, report "
                             "nothing early)"
                           : "a mean arrives only from a chunk already scaled: after the "
                             "reduce-scatter, tower r scales the chunk r+1 it owns by 1/N (that "
                             "chunk only), and each transfer moves its data before the report");
      }
    }
    if ((i + 1) % n_ == 0) {  // the end of a step: every buffer, every element
      for (int r = 0; r < n_; ++r) {
        for (std::size_t j = 0; j < count_; ++j) {
          if (ring.buffers[r][j] != model_[r][j]) {
            return fail(describe(ring, i, g, r, j, "what the schedule leaves there"),
                        "a step changes only the N chunks it moves (scale only the owned "
                        "chunk, once, between the two phases)");
          }
        }
      }
    }
  }

  // After ring_allreduce returned: every report seen and nothing wrong in any.
  void expect_complete() {
    if (failure_.empty() && reports_ != 2u * (n_ - 1) * n_) {
      fail("expected 2(N-1) x N = " + std::to_string(2 * (n_ - 1) * n_) + " transfers for N = " +
           std::to_string(n_) + ", got " + std::to_string(reports_),
           "report every transfer to ring.on_transfer, also of empty chunks");
    }
    EXPECT_TRUE(failure_.empty()) << failure_;
  }

 private:
  void scale_owned_chunks() {
    scaled_ = true;
    for (int r = 0; r < n_; ++r) {
      const Chunk owned = ring_chunk(count_, n_, wrap(r + 1, n_));
      for (std::size_t j = owned.offset; j < owned.offset + owned.size; ++j) {
        model_[r][j] /= static_cast<float>(n_);
      }
    }
  }
  std::string describe(const Ring& ring, std::size_t i, int g, int r, std::size_t j,
                       const std::string& what) const {
    std::ostringstream out;
    out << "expected tower " << r << "'s element " << j << " to hold " << what << ", "
        << model_[r][j] << ", after transfer " << i << " (step " << g << ", "
        << (g < n_ - 1 ? "reduce-scatter" : "all-gather") << ") of N = " << n_ << ", got "
        << ring.buffers[r][j];
    return out.str();
  }
  void fail(const std::string& what, const std::string& hint) {
    if (failure_.empty()) failure_ = what + "; hint: " + hint;
  }

  std::vector<std::vector<float>> model_;
  int n_;
  std::size_t count_;
  std::size_t reports_ = 0;
  std::vector<bool> received_;
  bool scaled_ = false;
  std::string failure_;
};

// Runs ring_allreduce on exact-mean data, checks every transfer as it happens (RingChecker)
// and every tower's buffer at the end, bit for bit.
void expect_exact_mean(int towers, std::size_t count) {
  ExactMeanData data = make_exact_mean_data(towers, count, 1000 * towers + count);
  RingChecker checker(data.towers, count);
  Ring ring{data.towers, nullptr};
  ring.on_transfer = [&](const Transfer& t) { checker.on_transfer(ring, t); };
  ring_allreduce(ring);
  checker.expect_complete();
  ASSERT_EQ(ring.towers(), towers) << "expected " << towers << " buffers after the all-reduce, got "
                                   << ring.towers() << "; hint: average in place, do not add or "
                                      "remove buffers";
  for (int r = 0; r < towers; ++r) {
    auto bad = first_mismatch(ring.buffers[r], data.mean);
    EXPECT_FALSE(bad) << "expected tower " << r << " of " << towers << " to hold the exact mean of "
                      << count << " elements, got "
                      << (bad ? describe_mismatch(ring.buffers[r], data.mean, *bad) : "")
                      << "; hint: N-1 reduce-scatter steps, scale the owned chunk (r+1) mod N "
                         "by 1/N, then N-1 all-gather steps";
  }
}

class RingOfNTowers : public ::testing::TestWithParam<int> {};

TEST_P(RingOfNTowers, LeavesTheExactMeanOnEveryTower) {
  expect_exact_mean(GetParam(), kCount);
  expect_exact_mean(GetParam(), 5 * GetParam() + 3);
}

INSTANTIATE_TEST_SUITE_P(Towers, RingOfNTowers, ::testing::Range(1, 9),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

TEST(RingAllReduce, AveragesFewerElementsThanTowers) {
  for (int towers = 2; towers <= 8; ++towers) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t(towers - 1)}) {
      SCOPED_TRACE("N=" + std::to_string(towers) + " count=" + std::to_string(count));
      expect_exact_mean(towers, count);
    }
  }
}

// Runs the ring over data's towers and returns every transfer it reported, in order;
// RingChecker checks on the way that the reports match the data moved.
std::vector<Transfer> watched_ring_transfers(ExactMeanData& data) {
  std::vector<Transfer> seen;
  RingChecker checker(data.towers, kCount);
  Ring ring{data.towers, nullptr};
  ring.on_transfer = [&](const Transfer& t) {
    seen.push_back(t);
    checker.on_transfer(ring, t);
  };
  ring_allreduce(ring);
  checker.expect_complete();
  return seen;
}

TEST(RingAllReduce, TakesTwoTimesNMinusOneStepsOfOneChunkPerTower) {
  for (int towers = 1; towers <= 8; ++towers) {
    ExactMeanData data = make_exact_mean_data(towers, kCount, 3);
    const std::vector<Transfer> seen = watched_ring_transfers(data);
    const std::size_t steps = 2 * static_cast<std::size_t>(towers - 1);
    ASSERT_EQ(seen.size(), steps * towers)
        << "expected 2(N-1) = " << steps << " steps of one transfer per tower (" << steps * towers
        << " transfers) for N = " << towers << ", got " << seen.size()
        << " transfers; hint: call ring.on_transfer once per tower per step, also for empty chunks";
    std::size_t moved = 0;
    for (std::size_t g = 0; g < steps; ++g) {
      std::vector<int> receives(towers, 0);
      for (int k = 0; k < towers; ++k) {
        const Transfer& t = seen[g * towers + k];
        if (t.to >= 0 && t.to < towers) ++receives[t.to];
        if (t.chunk >= 0 && t.chunk < towers) moved += ring_chunk(kCount, towers, t.chunk).size;
      }
      for (int r = 0; r < towers; ++r) {
        EXPECT_EQ(receives[r], 1) << "expected tower " << r << " to receive exactly one chunk in step "
                                  << g << " of N = " << towers << ", got " << receives[r]
                                  << "; hint: a step moves one chunk into every tower";
      }
    }
    EXPECT_EQ(moved, steps * kCount)
        << "expected the steps to move 2(N-1) x count = " << steps * kCount
        << " elements in all for N = " << towers << ", got " << moved
        << "; hint: each step moves N chunks that together make the whole buffer";
  }
}

TEST(RingAllReduce, SendsEachChunkOnlyToTheRightNeighbour) {
  for (int towers = 2; towers <= 8; ++towers) {
    ExactMeanData data = make_exact_mean_data(towers, kCount, 5);
    const std::vector<Transfer> seen = watched_ring_transfers(data);
    ASSERT_EQ(seen.size(), 2u * (towers - 1) * towers)
        << "expected 2(N-1) x N transfers for N = " << towers << ", got " << seen.size()
        << "; hint: report every transfer to ring.on_transfer";
    for (std::size_t i = 0; i < seen.size(); ++i) {
      const Transfer& t = seen[i];
      const int g = static_cast<int>(i) / towers;  // the step this transfer belongs to
      const bool reduce = g < towers - 1;
      const int s = reduce ? g : g - (towers - 1);
      const int chunk = reduce ? wrap(t.to - 1 - s, towers) : wrap(t.to - s, towers);
      ASSERT_TRUE(t.from == wrap(t.to - 1, towers) && t.reduce == reduce && t.chunk == chunk)
          << "expected transfer " << i << " (step " << g << " of N = " << towers << ") to move chunk "
          << chunk << " from tower " << wrap(t.to - 1, towers) << " to tower " << t.to
          << (reduce ? " and add it in" : " and copy it") << ", got chunk " << t.chunk << " from "
          << t.from << (t.reduce ? " added" : " copied")
          << "; hint: " << transfer_hint(t.from == wrap(t.to - 1, towers), t.reduce == reduce, reduce);
    }
  }
}

// What tower r's chunk c holds after reduce-scatter steps 0..s, from the schedule: chunk c
// starts at tower c and travels right one tower per step, gathering each tower's values;
// after step s it has reached tower c + s + 1. Towers it reached hold the partial sum of
// towers c..r; the others still hold their own values.
float partial_sum_after(const ExactMeanData& data, int r, int c, int s, std::size_t j) {
  const int n = static_cast<int>(data.towers.size());
  const int d = wrap(r - c, n);
  if (d < 1 || d > s + 1) return data.towers[r][j];
  float sum = 0;
  for (int k = 0; k <= d; ++k) sum += data.towers[wrap(c + k, n)][j];
  return sum;
}

TEST(RingAllReduce, ReduceScatterStepAddsTheLeftNeighboursChunk) {
  for (int towers : {2, 3, 4, 5}) {
    const std::size_t count = 4 * towers + 1;
    ExactMeanData data = make_exact_mean_data(towers, count, 11);
    Ring ring{data.towers, nullptr};
    for (int s = 0; s < towers - 1; ++s) {
      reduce_scatter_step(ring, s);
      for (int r = 0; r < towers; ++r) {
        for (int c = 0; c < towers; ++c) {
          const Chunk chunk = ring_chunk(count, towers, c);
          for (std::size_t j = chunk.offset; j < chunk.offset + chunk.size; ++j) {
            const float expected = partial_sum_after(data, r, c, s, j);
            ASSERT_EQ(ring.buffers[r][j], expected)
                << "expected tower " << r << "'s element " << j << " (chunk " << c << ") to be "
                << expected << " after reduce-scatter step " << s << " of N = " << towers
                << ", got " << ring.buffers[r][j] << "; hint: at step s tower r adds chunk "
                << "(r-1-s) mod N of tower r-1 into its own, and nothing else";
          }
        }
      }
    }
  }
}

TEST(RingAllReduce, AllGatherStepCopiesTheLeftNeighboursChunk) {
  for (int towers : {2, 3, 4, 5}) {
    const std::size_t count = 4 * towers + 1;
    // Before the all-gather, tower r holds the mean of its owned chunk (r+1) mod N only;
    // the rest of its buffer is marked with -1000 - r.
    std::vector<float> mean(count);
    for (std::size_t j = 0; j < count; ++j) mean[j] = static_cast<float>(j) + 0.5f;
    Ring ring;
    for (int r = 0; r < towers; ++r) {
      ring.buffers.emplace_back(count, -1000.0f - static_cast<float>(r));
      const Chunk owned = ring_chunk(count, towers, wrap(r + 1, towers));
      for (std::size_t j = owned.offset; j < owned.offset + owned.size; ++j) ring.buffers[r][j] = mean[j];
    }
    for (int s = 0; s < towers - 1; ++s) {
      all_gather_step(ring, s);
      for (int r = 0; r < towers; ++r) {
        for (int c = 0; c < towers; ++c) {
          // Chunk c starts at its owner c-1 and moves one tower right per step.
          const bool arrived = wrap(r - (c - 1), towers) <= s + 1;
          const Chunk chunk = ring_chunk(count, towers, c);
          for (std::size_t j = chunk.offset; j < chunk.offset + chunk.size; ++j) {
            const float expected = arrived ? mean[j] : -1000.0f - static_cast<float>(r);
            ASSERT_EQ(ring.buffers[r][j], expected)
                << "expected tower " << r << "'s element " << j << " (chunk " << c << ") to be "
                << expected << " after all-gather step " << s << " of N = " << towers << ", got "
                << ring.buffers[r][j] << "; hint: at step s tower r copies chunk (r-s) mod N of "
                << "tower r-1 over its own, and nothing else";
          }
        }
      }
    }
  }
}

TEST(RingAllReduce, RejectsBuffersOfDifferentSizes) {
  Ring none;
  expect_invalid_argument([&] { ring_allreduce(none); }, "a ring with no buffers",
                          "check ring.buffers.empty() first");
  Ring uneven{{std::vector<float>(8, 1.0f), std::vector<float>(7, 1.0f)}, nullptr};
  expect_invalid_argument([&] { ring_allreduce(uneven); }, "buffers of 8 and 7 elements",
                          "every tower's buffer must have the same size");
  // Four towers, the odd size last: every buffer is compared, not only the first two.
  Ring last_uneven{{std::vector<float>(8, 1.0f), std::vector<float>(8, 1.0f),
                    std::vector<float>(8, 1.0f), std::vector<float>(7, 1.0f)},
                   nullptr};
  expect_invalid_argument([&] { ring_allreduce(last_uneven); },
                          "four buffers of 8, 8, 8 and 7 elements",
                          "compare EVERY tower's buffer size with the first, not only tower 1's");
}

}  // namespace
}  // namespace towers::exercises

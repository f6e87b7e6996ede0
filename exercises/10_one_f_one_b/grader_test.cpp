// SPDX-License-Identifier: MIT
// Grader of exercise 10: the 1F1B schedule of one stage. Each test is one point.
//
// The grader asks one_f_one_b() for every stage's order and observes what those orders do
// when run together: it plays them on ideal stages (a forward takes 1, a backward 2, each
// op starts when its stage is free and the op it depends on has ended) and counts, per
// stage, the micro-batches whose activations are held (forward run, backward not yet).
// Its oracle is written here, not taken from the project: this grader links no library.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "one_f_one_b.hpp"

namespace towers::exercises {
namespace {

// "F0 F1 B0 ...", an op of another chunk than 0 as "F1.2" (micro-batch 1, chunk 2).
std::string text(const std::vector<StageOp>& ops) {
  std::ostringstream out;
  for (const auto& op : ops) {
    out << static_cast<char>(op.pass) << op.micro_batch;
    if (op.chunk != 0) out << '.' << op.chunk;
    out << ' ';
  }
  return out.str();
}

// The orders of every stage, or the stub's NotImplemented as a failure.
std::vector<std::vector<StageOp>> all_stages(int p, int m) {
  std::vector<std::vector<StageOp>> orders;
  for (int s = 0; s < p; ++s) orders.push_back(one_f_one_b(p, m, s));
  return orders;
}

// Ideal stages: returns each op's end time per stage, or nothing when the stages wait on
// each other in a cycle (some op can never start); `stuck` then names the ops.
using Key = std::tuple<int, char, int>;  // stage, pass, micro-batch
std::optional<std::map<Key, std::pair<double, double>>> play(
    const std::vector<std::vector<StageOp>>& orders, std::string& stuck) {
  const int p = static_cast<int>(orders.size());
  std::map<Key, std::pair<double, double>> when;  // start, end
  std::vector<std::size_t> next(p, 0);
  std::vector<double> free_at(p, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      while (next[s] < orders[s].size()) {
        const StageOp& op = orders[s][next[s]];
        // What it waits for: the stage before's forward, the stage after's backward, or
        // (the last stage's backward) its own forward.
        Key before;
        bool needs = true;
        if (op.pass == Pass::kForward) {
          needs = s > 0;
          before = {s - 1, 'F', op.micro_batch};
        } else {
          before = s + 1 < p ? Key{s + 1, 'B', op.micro_batch} : Key{s, 'F', op.micro_batch};
        }
        double ready = free_at[s];
        if (needs) {
          auto found = when.find(before);
          if (found == when.end()) break;
          ready = std::max(ready, found->second.second);
        }
        const double cost = op.pass == Pass::kForward ? 1.0 : 2.0;
        when[{s, static_cast<char>(op.pass), op.micro_batch}] = {ready, ready + cost};
        free_at[s] = ready + cost;
        ++next[s];
        progress = true;
      }
    }
  }
  for (int s = 0; s < p; ++s) {
    if (next[s] < orders[s].size()) {
      const StageOp& op = orders[s][next[s]];
      stuck += " stage " + std::to_string(s) + " waits at " + static_cast<char>(op.pass) +
               std::to_string(op.micro_batch) + ";";
    }
  }
  if (!stuck.empty()) return std::nullopt;
  return when;
}

int peak_held(const std::vector<StageOp>& ops) {
  int held = 0, peak = 0;
  for (const auto& op : ops) {
    held += op.pass == Pass::kForward ? 1 : -1;
    peak = std::max(peak, held);
  }
  return peak;
}

struct Shape {
  int p, m;
};
// Fewer micro-batches than stages, as many, more; one stage; one micro-batch; p - s - 1
// above m by two and more, on stage 1 too ({7, 3}, {8, 2}: a cap on stage 0 alone
// shows); odd p with m above p and not a multiple of it ({3, 4}, {5, 7}: a last round
// of m % p micro-batches).
const Shape kShapes[] = {{1, 1}, {1, 4}, {2, 1}, {2, 4}, {3, 2}, {3, 4}, {4, 4},
                         {4, 8}, {5, 3}, {5, 7}, {7, 3}, {8, 2}, {8, 16}};

// Whole ops, compared with StageOp's own ==: pass, micro-batch and chunk (with one model
// chunk per stage, chunk 0), since the pipeline's dependency() reads every field.
TEST(OneFOneB, EveryMicroBatchRunsForwardAndBackwardOnce) {
  for (const auto [p, m] : kShapes) {
    for (int s = 0; s < p; ++s) {
      const auto ops = one_f_one_b(p, m, s);
      bool once = ops.size() == static_cast<std::size_t>(2 * m);
      bool once_but_chunk = once;  // the same, the chunks left out
      for (int k = 0; k < m; ++k) {
        for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
          const StageOp wanted{pass, k, 0};
          once = once && std::count(ops.begin(), ops.end(), wanted) == 1;
          const auto same_but_chunk = [&](const StageOp& op) {
            return op.pass == pass && op.micro_batch == k;
          };
          once_but_chunk =
              once_but_chunk && std::count_if(ops.begin(), ops.end(), same_but_chunk) == 1;
        }
      }
      EXPECT_TRUE(once) << "expected F0..F" << m - 1 << " and B0..B" << m - 1
                        << " of chunk 0 once each on stage " << s << " of " << p << ", got "
                        << text(ops) << "; hint: "
                        << (once_but_chunk
                                ? "every op's chunk is 0: with one model chunk per stage there "
                                  "is no other, and the pipeline reads it (chunk c of stage s "
                                  "is virtual stage c * p + s), so it is not the stage's number"
                                : "the warm-up never runs more forwards than there are "
                                  "micro-batches, and the cool-down runs every backward not "
                                  "yet run");
    }
  }
}

TEST(OneFOneB, ABackwardComesAfterItsForward) {
  for (const auto [p, m] : kShapes) {
    for (int s = 0; s < p; ++s) {
      const auto ops = one_f_one_b(p, m, s);
      std::vector<bool> forward_done(m, false);
      for (const auto& op : ops) {
        if (op.micro_batch < 0 || op.micro_batch >= m) continue;
        if (op.pass == Pass::kForward) forward_done[op.micro_batch] = true;
        else
          ASSERT_TRUE(forward_done[op.micro_batch])
              << "expected F" << op.micro_batch << " before B" << op.micro_batch << " on stage "
              << s << " of " << p << ", got " << text(ops)
              << "; hint: in the steady state run the forward first, then the backward";
      }
    }
  }
}

TEST(OneFOneB, MicroBatchesGoInOrderWithinEachPass) {
  for (const auto [p, m] : kShapes) {
    for (int s = 0; s < p; ++s) {
      const auto ops = one_f_one_b(p, m, s);
      int next_forward = 0, next_backward = 0;
      bool in_order = true;
      for (const auto& op : ops) {
        int& expected = op.pass == Pass::kForward ? next_forward : next_backward;
        in_order = in_order && op.micro_batch == expected++;
      }
      EXPECT_TRUE(in_order) << "expected F0, F1, ... and B0, B1, ... in increasing order on "
                            << "stage " << s << " of " << p << ", got " << text(ops)
                            << "; hint: backwards go in the order their forwards ran";
    }
  }
}

TEST(OneFOneB, WarmsUpWithPMinusSMinusOneForwards) {
  for (const auto [p, m] : kShapes) {
    for (int s = 0; s < p; ++s) {
      const auto ops = one_f_one_b(p, m, s);
      const auto first_backward = std::find_if(
          ops.begin(), ops.end(), [](const StageOp& op) { return op.pass == Pass::kBackward; });
      const long forwards_before = first_backward - ops.begin();
      // p-s-1 warm-up forwards, plus the steady state's first forward when there is one.
      const long expected = std::min(p - s - 1, m) + (m > p - s - 1 ? 1 : 0);
      EXPECT_EQ(forwards_before, expected)
          << "stage " << s << " of " << p << " with " << m << " micro-batches ran "
          << forwards_before << " forwards before its first backward, expected " << expected
          << " (got " << text(ops) << "); hint: the warm-up is p - s - 1 forwards, at most m";
    }
  }
}

TEST(OneFOneB, SteadyStateAlternatesOneForwardOneBackward) {
  for (const auto [p, m] : kShapes) {
    for (int s = 0; s < p; ++s) {
      const auto ops = one_f_one_b(p, m, s);
      const int warmup = std::min(p - s - 1, m);
      bool alternates = ops.size() == static_cast<std::size_t>(2 * m);
      for (int k = 0; alternates && k < m - warmup; ++k) {
        alternates = ops[warmup + 2 * k].pass == Pass::kForward &&
                     ops[warmup + 2 * k + 1].pass == Pass::kBackward;
      }
      EXPECT_TRUE(alternates) << "expected F B F B ... after the warm-up on stage " << s
                              << " of " << p << ", got " << text(ops)
                              << "; hint: each backward frees a micro-batch for the next forward";
    }
  }
}

TEST(OneFOneB, TheStagesNeverWaitOnEachOtherInACycle) {
  for (const auto [p, m] : kShapes) {
    std::string stuck;
    EXPECT_TRUE(play(all_stages(p, m), stuck).has_value())
        << "with " << p << " stages and " << m << " micro-batches the stages wait on each other "
        << "forever:" << stuck << "; hint: a stage's backward needs the next stage's backward, "
        << "which needs that stage's forwards: do not wait for a backward before enough forwards";
  }
}

TEST(OneFOneB, HoldsAtMostPMinusSMicroBatchesActivations) {
  for (const auto [p, m] : kShapes) {
    for (int s = 0; s < p; ++s) {
      const auto ops = one_f_one_b(p, m, s);
      EXPECT_EQ(peak_held(ops), std::min(m, p - s))
          << "stage " << s << " of " << p << " with " << m << " micro-batches holds "
          << peak_held(ops) << " micro-batches' activations at once, expected "
          << std::min(m, p - s) << " (" << text(ops) << "); hint: that is 1F1B's point: "
          << "GPipe holds all m; one more warm-up forward holds one more";
    }
  }
}

TEST(OneFOneB, LeavesOnlyTheClosedFormBubble) {
  for (const auto [p, m] : kShapes) {
    std::string stuck;
    const auto when = play(all_stages(p, m), stuck);
    ASSERT_TRUE(when.has_value()) << "the stages deadlock:" << stuck;
    double end = 0;
    for (const auto& [key, times] : *when) end = std::max(end, times.second);
    // Ideal: every stage busy m * (1 + 2), idle (p - 1) * (1 + 2): (m + p - 1) * 3 in all.
    const double expected = (m + p - 1) * 3.0;
    EXPECT_DOUBLE_EQ(end, expected)
        << "with " << p << " stages and " << m << " micro-batches the flush takes " << end
        << " on ideal stages (forward 1, backward 2), expected (m + p - 1) * 3 = " << expected
        << ", a bubble of (p-1)/(m+p-1); hint: too few warm-up forwards leave a stage idle "
        << "while it waits for a backward";
  }
}

}  // namespace
}  // namespace towers::exercises

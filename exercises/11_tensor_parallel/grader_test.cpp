// SPDX-License-Identifier: MIT
// Grader of exercise 11: Megatron's f and g. Each test is one point.
//
// The grader is the all-reduce: tensor_forward() and tensor_backward() call its
// all_reduce_sum(), which records which buffers it was given, how many floats, in which
// pass, and what every buffer held at that moment, then adds them up in rank order. What
// is checked is that record and the ranks' buffers, against the unsplit pair computed by
// the grader (its own shard layout, written here, never feature_shard()'s). Every value is
// a small multiple of a power of two, so every sum is exact in float in any order, and
// every result is compared bit for bit. Every buffer has guard cells on both sides: a
// write past its end shows, in any build, as a changed guard.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "exercises/grader.hpp"
#include "tensor_parallel.hpp"

namespace towers::exercises {
namespace {

// The features rank r owns: chunk r of the ring's cut, the first features % t one longer.
Shard owned(int features, int t, int r) {
  const int base = features / t, longer = features % t;
  return Shard{r * base + std::min(r, longer), base + (r < longer ? 1 : 0)};
}

std::string range(const Shard& s) {
  return "[" + std::to_string(s.offset) + ", " + std::to_string(s.offset + s.size) + ")";
}

using Matrix = std::vector<float>;

// Columns s of a [rows, cols] matrix, [rows, s.size].
Matrix columns(const Matrix& m, int rows, int cols, const Shard& s) {
  Matrix out(static_cast<std::size_t>(rows) * s.size);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < s.size; ++j) out[i * s.size + j] = m[i * cols + s.offset + j];
  }
  return out;
}
// Rows s of a [rows, cols] matrix, [s.size, cols].
Matrix rows_of(const Matrix& m, int cols, const Shard& s) {
  return Matrix(m.begin() + s.offset * cols, m.begin() + (s.offset + s.size) * cols);
}

// A buffer between 16 guard cells on each side that nothing may write.
using Guarded = GuardedBuffer<16>;

// One call of the all-reduce, as the grader saw it.
struct Call {
  bool forward = true;     // made during tensor_forward()
  std::string buffers;     // "every rank's y", "every rank's dx", or what else
  std::size_t count = 0;
  std::vector<Matrix> at_call;  // [rank] the buffers' values when it was called
};

// Multiples of 1/`scale` in [-span, span], seeded: small enough that every product and
// sum of the pair is exact in float.
Matrix draw(std::mt19937_64& rng, std::size_t n, int span, float scale) {
  std::uniform_int_distribution<int> k(-span, span);
  Matrix m(n);
  for (float& v : m) v = static_cast<float>(k(rng)) / scale;
  return m;
}

// t ranks holding the pair of `d`, the all-reduce that watches them, and the unsplit oracle.
class World final : public AllReduce {
 public:
  World(int t, Dims d, std::uint64_t seed) : t_(t), d_(d) {
    std::mt19937_64 rng(seed);
    const std::size_t b = d.batch, in = d.inputs, hid = d.hidden, out = d.outputs;
    x_ = draw(rng, b * in, 16, 8);
    w1_ = draw(rng, in * hid, 8, 8);
    b1_ = draw(rng, hid, 8, 8);
    w2_ = draw(rng, hid * out, 8, 8);
    b2_ = draw(rng, out, 8, 8);
    for (float& v : b2_) v = v == 0 ? 0.625f : v;  // every entry of b2 counts
    dy_ = draw(rng, b * out, 8, 8);
    oracle();
    for (int r = 0; r < t_; ++r) {
      const Shard s = owned(d.hidden, t, r);
      const std::size_t c = s.size;
      w1s_.emplace_back(columns(w1_, d.inputs, d.hidden, s));
      b1s_.emplace_back(Matrix(b1_.begin() + s.offset, b1_.begin() + s.offset + s.size));
      w2s_.emplace_back(rows_of(w2_, d.outputs, s));
      b2s_.emplace_back(b2_);
      h_.emplace_back(b * c);
      y_.emplace_back(b * out);
      dx_.emplace_back(b * in);
      dw1_.emplace_back(in * c);
      db1_.emplace_back(c);
      dw2_.emplace_back(c * out);
      db2_.emplace_back(out);
      dh_.emplace_back(b * c);
      dz_.emplace_back(b * out);
    }
  }

  std::vector<TensorRank> ranks() {
    std::vector<TensorRank> out;
    for (int r = 0; r < t_; ++r) {
      out.push_back({w1s_[r].data(), b1s_[r].data(), w2s_[r].data(), b2s_[r].data(),
                     h_[r].data(), y_[r].data(), dx_[r].data(), dw1_[r].data(), db1_[r].data(),
                     dw2_[r].data(), db2_[r].data(), dh_[r].data(), dz_[r].data()});
    }
    return out;
  }
  void forward() {
    forward_ = true;
    tensor_forward(*this, ranks(), d_, x_.data());
  }
  void backward() {
    forward_ = false;
    tensor_backward(*this, ranks(), d_, x_.data(), dy_.data());
  }

  void all_reduce_sum(std::span<float* const> buffers, std::size_t count) override {
    Call call{forward_, what(buffers), count, {}};
    for (float* buffer : buffers) call.at_call.emplace_back(buffer, buffer + count);
    calls_.push_back(call);
    Matrix sum(count, 0.0f);
    for (const Matrix& m : call.at_call) {
      for (std::size_t i = 0; i < count; ++i) sum[i] += m[i];  // exact: any order
    }
    for (float* buffer : buffers) std::copy(sum.begin(), sum.end(), buffer);
  }

  // The calls made in one pass.
  std::vector<Call> calls(bool forward) const {
    std::vector<Call> out;
    for (const Call& c : calls_) {
      if (c.forward == forward) out.push_back(c);
    }
    return out;
  }
  std::string calls_text(bool forward) const {
    std::ostringstream text;
    for (const Call& c : calls(forward)) text << "all_reduce_sum(" << c.buffers << ", " << c.count << ") ";
    return text.str().empty() ? "no call" : text.str();
  }

  int t() const { return t_; }
  const Dims& dims() const { return d_; }
  std::string where() const {
    return std::to_string(t_) + (t_ == 1 ? " rank" : " ranks") + ", batch " +
           std::to_string(d_.batch) + ", " + std::to_string(d_.inputs) + " -> " +
           std::to_string(d_.hidden) + " -> " + std::to_string(d_.outputs);
  }
  Shard shard(int r) const { return owned(d_.hidden, t_, r); }

  // The ranks' buffers now.
  Matrix h(int r) const { return h_[r].values(); }
  Matrix y(int r) const { return y_[r].values(); }
  Matrix dx(int r) const { return dx_[r].values(); }
  Matrix dw1(int r) const { return dw1_[r].values(); }
  Matrix db1(int r) const { return db1_[r].values(); }
  Matrix dw2(int r) const { return dw2_[r].values(); }
  Matrix db2(int r) const { return db2_[r].values(); }
  // Which buffer's guard cells were written, or "".
  std::string written_guard() const {
    const std::pair<const char*, const std::vector<Guarded>*> all[] = {
        {"h", &h_}, {"y", &y_}, {"dx", &dx_}, {"dw1", &dw1_}, {"db1", &db1_},
        {"dw2", &dw2_}, {"db2", &db2_}, {"dh", &dh_}, {"dz", &dz_}};
    for (const auto& [name, buffers] : all) {
      for (int r = 0; r < t_; ++r) {
        if (!(*buffers)[r].guards_intact()) return "rank " + std::to_string(r) + "'s " + name;
      }
    }
    return "";
  }

  // The unsplit pair, and each rank's expected share of it.
  Matrix expected_h(int r) const { return columns(h_full_, d_.batch, d_.hidden, shard(r)); }
  Matrix expected_partial(int r) const {  // z_r = h_r W2_r
    Matrix z(static_cast<std::size_t>(d_.batch) * d_.outputs);
    const Shard s = shard(r);
    const Matrix h = expected_h(r), w2 = rows_of(w2_, d_.outputs, s);
    matmul(d_.batch, d_.outputs, s.size, h.data(), s.size, w2.data(), d_.outputs, z.data(), d_.outputs);
    return z;
  }
  Matrix expected_partial_dx(int r) const {  // dx_r = dh_r W1_r^T
    Matrix dx(static_cast<std::size_t>(d_.batch) * d_.inputs);
    const Shard s = shard(r);
    const Matrix dh = columns(dh_full_, d_.batch, d_.hidden, s);
    const Matrix w1 = columns(w1_, d_.inputs, d_.hidden, s);
    matmul_bt(d_.batch, d_.inputs, s.size, dh.data(), s.size, w1.data(), s.size, dx.data(), d_.inputs);
    return dx;
  }
  const Matrix& expected_y() const { return y_full_; }
  const Matrix& expected_z() const { return z_full_; }
  const Matrix& expected_dx() const { return dx_full_; }
  Matrix expected_dw1(int r) const { return columns(dw1_full_, d_.inputs, d_.hidden, shard(r)); }
  Matrix expected_db1(int r) const {
    const Shard s = shard(r);
    return Matrix(db1_full_.begin() + s.offset, db1_full_.begin() + s.offset + s.size);
  }
  Matrix expected_dw2(int r) const { return rows_of(dw2_full_, d_.outputs, shard(r)); }
  const Matrix& expected_db2() const { return db2_full_; }
  const Matrix& b2() const { return b2_; }
  const Matrix& dw1_whole() const { return dw1_full_; }

 private:
  std::string what(std::span<float* const> buffers) const {
    const auto every = [&](const std::vector<Guarded>& mine) {
      if (buffers.size() != mine.size()) return false;
      for (std::size_t r = 0; r < mine.size(); ++r) {
        if (buffers[r] != mine[r].data()) return false;
      }
      return true;
    };
    const std::pair<const char*, const std::vector<Guarded>*> named[] = {
        {"every rank's y", &y_}, {"every rank's dx", &dx_}, {"every rank's dz", &dz_},
        {"every rank's h", &h_}, {"every rank's dh", &dh_}, {"every rank's db2", &db2_},
        {"every rank's dw2", &dw2_}, {"every rank's dw1", &dw1_}, {"every rank's db1", &db1_}};
    for (const auto& [name, mine] : named) {
      if (every(*mine)) return name;
    }
    return std::to_string(buffers.size()) + " buffers that are not one kind of every rank's, "
           "in rank order";
  }

  void oracle() {
    const int b = d_.batch, in = d_.inputs, hid = d_.hidden, out = d_.outputs;
    h_full_.resize(static_cast<std::size_t>(b) * hid);
    matmul(b, hid, in, x_.data(), in, w1_.data(), hid, h_full_.data(), hid);
    add_bias_relu(b, hid, b1_.data(), h_full_.data());
    z_full_.resize(static_cast<std::size_t>(b) * out);
    matmul(b, out, hid, h_full_.data(), hid, w2_.data(), out, z_full_.data(), out);
    y_full_ = z_full_;
    add_bias_relu(b, out, b2_.data(), y_full_.data());
    Matrix dz(static_cast<std::size_t>(b) * out);
    relu_backward(b * out, y_full_.data(), dy_.data(), dz.data());
    db2_full_.resize(out);
    column_sums(b, out, dz.data(), db2_full_.data());
    dw2_full_.resize(static_cast<std::size_t>(hid) * out);
    matmul_at(hid, out, b, h_full_.data(), hid, dz.data(), out, dw2_full_.data(), out);
    dh_full_.resize(static_cast<std::size_t>(b) * hid);
    matmul_bt(b, hid, out, dz.data(), out, w2_.data(), out, dh_full_.data(), hid);
    relu_backward(b * hid, h_full_.data(), dh_full_.data(), dh_full_.data());
    dw1_full_.resize(static_cast<std::size_t>(in) * hid);
    matmul_at(in, hid, b, x_.data(), in, dh_full_.data(), hid, dw1_full_.data(), hid);
    db1_full_.resize(hid);
    column_sums(b, hid, dh_full_.data(), db1_full_.data());
    dx_full_.resize(static_cast<std::size_t>(b) * in);
    matmul_bt(b, in, hid, dh_full_.data(), hid, w1_.data(), hid, dx_full_.data(), in);
  }

  int t_;
  Dims d_;
  bool forward_ = true;
  Matrix x_, w1_, b1_, w2_, b2_, dy_;
  Matrix h_full_, z_full_, y_full_, db2_full_, dw2_full_, dh_full_, dw1_full_, db1_full_, dx_full_;
  std::vector<Guarded> w1s_, b1s_, w2s_, b2s_, h_, y_, dx_, dw1_, db1_, dw2_, db2_, dh_, dz_;
  std::vector<Call> calls_;
};

struct Case {
  int t;
  Dims d;
};
// Features the ranks divide and not, one rank, and more ranks than features.
const Case kCases[] = {{1, {3, 5, 7, 4}}, {2, {3, 5, 7, 4}}, {3, {3, 5, 7, 4}},
                       {4, {3, 5, 7, 4}}, {4, {2, 3, 8, 2}}, {3, {4, 6, 9, 5}}};

// Runs both passes of every case (each with a fresh world), calling check(world).
template <typename Check>
void for_every_case(std::uint64_t seed, bool backward, const Check& check) {
  for (const Case& c : kCases) {
    World w(c.t, c.d, seed + static_cast<std::uint64_t>(c.t));
    w.forward();
    if (backward) w.backward();
    check(w);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// What rank r's output tells of the likely mistake.
std::string diagnose_y(const World& w, const Matrix& got) {
  const int t = w.t(), b = w.dims().batch, out = w.dims().outputs;
  auto with = [&](float z_scale, float bias_scale) {
    Matrix y = w.expected_z();
    for (float& v : y) v *= z_scale;
    Matrix bias = w.b2();
    for (float& v : bias) v *= bias_scale;
    add_bias_relu(b, out, bias.data(), y.data());
    return y;
  };
  if (t > 1 && got == with(1.0f / static_cast<float>(t), 1.0f)) {
    return "that is the mean of the ranks' partial sums: g adds the parts of one sum, so "
           "take the sum as all_reduce_sum() leaves it, not divided by the ranks";
  }
  if (t > 1 && got == with(1.0f, static_cast<float>(t))) {
    return "b2 was added t times: each rank added it to its partial sums before g, which "
           "adds them up; add b2 once, on the whole sum, after g";
  }
  if (got == with(1.0f, 0.0f)) return "b2 is missing: add it (and the ReLU) after g";
  return "every rank's partial sums h_r W2_r, then one all_reduce_sum() of every rank's y, "
         "then add_bias_relu() with b2 on each";
}

// --- feature_shard ------------------------------------------------------------------------

TEST(FeatureShard, TilesTheFeaturesEachOwnedOnce) {
  for (int t = 1; t <= 8; ++t) {
    for (int features : {1, 2, 3, 5, 7, 8, 13, 64, 384}) {
      std::vector<int> owners(features, 0);
      for (int r = 0; r < t; ++r) {
        const Shard s = feature_shard(features, t, r);
        ASSERT_TRUE(s.offset >= 0 && s.size >= 0 && s.offset + s.size <= features)
            << "with " << t << " ranks and " << features << " features rank " << r
            << "'s shard is " << range(s) << "; hint: the last chunk ends at `features`";
        for (int j = s.offset; j < s.offset + s.size; ++j) ++owners[j];
      }
      const auto wrong = std::find_if(owners.begin(), owners.end(), [](int o) { return o != 1; });
      ASSERT_TRUE(wrong == owners.end())
          << "with " << t << " ranks and " << features << " features, feature "
          << (wrong - owners.begin()) << " is owned by " << *wrong << " ranks; hint: chunk r "
          << "starts where chunk r-1 ends, at r * (features / t) + min(r, features % t)";
    }
  }
}

TEST(FeatureShard, RankROwnsChunkRTheFirstOnesLonger) {
  for (int t = 1; t <= 8; ++t) {
    for (int features : {1, 3, 7, 10, 384, 385}) {
      for (int r = 0; r < t; ++r) {
        const Shard got = feature_shard(features, t, r), expected = owned(features, t, r);
        ASSERT_TRUE(got.offset == expected.offset && got.size == expected.size)
            << "expected rank " << r << " of " << t << " to own features " << range(expected)
            << " of " << features << ", got " << range(got) << "; hint: rank r owns chunk r, "
            << "in rank order, and the first features % t chunks are one feature longer";
      }
    }
  }
}

// --- the forward pass: g --------------------------------------------------------------------

TEST(Forward, CallsGOnceWithEveryRanksOutput) {
  for_every_case(10, false, [](const World& w) {
    const auto calls = w.calls(true);
    const std::size_t count = static_cast<std::size_t>(w.dims().batch) * w.dims().outputs;
    EXPECT_TRUE(calls.size() == 1 && calls[0].buffers == "every rank's y" && calls[0].count == count)
        << "with " << w.where() << " expected one all_reduce_sum(every rank's y, " << count
        << ") in the forward pass, got " << w.calls_text(true) << "; hint: the column layer needs "
        << "no communication (each output is a whole dot product); g adds the row layer's "
        << "partial sums once, after every rank has computed its own";
  });
}

TEST(Forward, GIsGivenEachRanksPartialSumsOnly) {
  for_every_case(20, false, [](const World& w) {
    const auto calls = w.calls(true);
    ASSERT_FALSE(calls.empty()) << "with " << w.where() << " g was never called; hint: the row "
                                << "layer's outputs are partial sums until they are added up";
    const Call& g = calls.front();
    ASSERT_EQ(g.at_call.size(), static_cast<std::size_t>(w.t())) << "with " << w.where();
    for (int r = 0; r < w.t(); ++r) {
      const Matrix expected = w.expected_partial(r);
      const auto bad = first_mismatch(g.at_call[r], expected);
      ASSERT_FALSE(bad.has_value())
          << "with " << w.where() << ", when g was called rank " << r << "'s buffer held "
          << describe_mismatch(g.at_call[r], expected, *bad) << " (expected h_r W2_r, its "
          << "partial sums); hint: g must get every rank's own partial sums, computed before "
          << "the call: no bias yet (b2 is added once, after the sum), no ReLU (the ReLU of a "
          << "part is not a part of the ReLU), and the call after the loop over the ranks";
    }
  });
}

TEST(Forward, EachRankComputesItsColumnsOfH) {
  for_every_case(30, false, [](const World& w) {
    for (int r = 0; r < w.t(); ++r) {
      const Matrix got = w.h(r), expected = w.expected_h(r);
      const auto bad = first_mismatch(got, expected);
      ASSERT_FALSE(bad.has_value())
          << "with " << w.where() << " rank " << r << "'s h (features " << range(w.shard(r))
          << "): " << describe_mismatch(got, expected, *bad) << "; hint: h_r = relu(x W1_r + "
          << "b1_r), with c = feature_shard(hidden, t, r).size columns";
    }
  });
}

TEST(Forward, EveryRankEndsWithTheWholeOutput) {
  for_every_case(40, false, [](const World& w) {
    for (int r = 0; r < w.t(); ++r) {
      const Matrix got = w.y(r);
      const auto bad = first_mismatch(got, w.expected_y());
      ASSERT_FALSE(bad.has_value())
          << "with " << w.where() << " rank " << r << "'s y: "
          << describe_mismatch(got, w.expected_y(), *bad) << "; hint: " << diagnose_y(w, got);
    }
  });
}

// --- the backward pass: f -------------------------------------------------------------------

TEST(Backward, CallsFOnceWithEveryRanksInputGradient) {
  for_every_case(50, true, [](const World& w) {
    const auto calls = w.calls(false);
    const std::size_t count = static_cast<std::size_t>(w.dims().batch) * w.dims().inputs;
    EXPECT_TRUE(calls.size() == 1 && calls[0].buffers == "every rank's dx" && calls[0].count == count)
        << "with " << w.where() << " expected one all_reduce_sum(every rank's dx, " << count
        << ") in the backward pass, got " << w.calls_text(false) << "; hint: g's backward "
        << "moves nothing (every rank holds y, so dz, whole), and the weight gradients stay "
        << "on their rank; only x's gradient is a sum over the ranks' features";
  });
}

TEST(Backward, FIsGivenEachRanksPartialInputGradient) {
  for_every_case(60, true, [](const World& w) {
    const auto calls = w.calls(false);
    const auto f = std::find_if(calls.begin(), calls.end(),
                                [](const Call& c) { return c.buffers == "every rank's dx"; });
    ASSERT_TRUE(f != calls.end()) << "with " << w.where() << " f (the all-reduce of every "
                                  << "rank's dx) was never called; got " << w.calls_text(false)
                                  << "; hint: each rank's dx is only its features' part";
    for (int r = 0; r < w.t(); ++r) {
      const Matrix expected = w.expected_partial_dx(r);
      const auto bad = first_mismatch(f->at_call[r], expected);
      ASSERT_FALSE(bad.has_value())
          << "with " << w.where() << ", when f was called rank " << r << "'s dx held "
          << describe_mismatch(f->at_call[r], expected, *bad) << " (expected dh_r W1_r^T); "
          << "hint: dz = relu_backward(y, dy) as it is (not all-reduced: every rank has it "
          << "whole), dh_r = (dz W2_r^T) where h_r > 0, dx_r = dh_r W1_r^T";
    }
  });
}

TEST(Backward, WeightGradientsAreEachRanksOwn) {
  for_every_case(70, true, [](const World& w) {
    for (int r = 0; r < w.t(); ++r) {
      const std::pair<const char*, std::pair<Matrix, Matrix>> grads[] = {
          {"dw2", {w.dw2(r), w.expected_dw2(r)}},
          {"dw1", {w.dw1(r), w.expected_dw1(r)}},
          {"db1", {w.db1(r), w.expected_db1(r)}}};
      for (const auto& [name, pair] : grads) {
        const auto bad = first_mismatch(pair.first, pair.second);
        ASSERT_FALSE(bad.has_value())
            << "with " << w.where() << " rank " << r << "'s " << name << ": "
            << describe_mismatch(pair.first, pair.second, *bad) << "; hint: each rank's weight "
            << "gradients come from its own h_r, dh_r and the whole dz: they are complete on the "
            << "rank and never cross a link (an all-reduce of dz or of them adds t copies)";
      }
    }
  });
}

TEST(Backward, EveryRankHasTheWholeBiasGradientOnce) {
  for_every_case(80, true, [](const World& w) {
    for (int r = 0; r < w.t(); ++r) {
      const Matrix got = w.db2(r);
      const auto bad = first_mismatch(got, w.expected_db2());
      ASSERT_FALSE(bad.has_value())
          << "with " << w.where() << " rank " << r << "'s db2: "
          << describe_mismatch(got, w.expected_db2(), *bad) << "; hint: b2 is replicated and "
          << "every rank holds dz whole, so db2 = column sums of dz on each rank, already "
          << "complete: all-reducing it (or dz) counts it t times";
    }
  });
}

TEST(Backward, EveryRankEndsWithTheWholeInputGradient) {
  for_every_case(90, true, [](const World& w) {
    for (int r = 0; r < w.t(); ++r) {
      const Matrix got = w.dx(r);
      const auto bad = first_mismatch(got, w.expected_dx());
      ASSERT_FALSE(bad.has_value())
          << "with " << w.where() << " rank " << r << "'s dx: "
          << describe_mismatch(got, w.expected_dx(), *bad) << "; hint: after f every rank "
          << "holds the sum of the ranks' parts, as all_reduce_sum() leaves it (not their mean)";
    }
  });
}

// --- gather_columns -----------------------------------------------------------------------

TEST(GatherColumns, PutsEachRanksColumnsInTheirPlace) {
  for (int t = 1; t <= 6; ++t) {
    for (int features : {1, 4, 7, 12}) {
      const int rows = 3;
      Matrix whole(static_cast<std::size_t>(rows) * features);
      for (std::size_t i = 0; i < whole.size(); ++i) whole[i] = static_cast<float>(i) + 0.5f;
      std::vector<Guarded> shards;
      for (int r = 0; r < t; ++r) shards.emplace_back(columns(whole, rows, features, owned(features, t, r)));
      std::vector<const float*> pointers;
      for (Guarded& s : shards) pointers.push_back(s.data());
      Guarded out(whole.size());
      gather_columns(pointers, rows, features, out.data());
      const Matrix got = out.values();
      const auto bad = first_mismatch(got, whole);
      ASSERT_FALSE(bad.has_value())
          << "with " << t << " ranks, " << rows << " rows of " << features << " features: "
          << describe_mismatch(got, whole, *bad) << " (element i holds i + 0.5); hint: rank "
          << "r's shard is [rows, c_r]; its row i goes to columns feature_shard(features, t, "
          << "r) of row i of the whole: interleaved, in rank order, not one shard after another";
      ASSERT_TRUE(out.guards_intact()) << "with " << t << " ranks and " << features
                                       << " features a write past the whole matrix";
    }
  }
}

// --- every buffer, and ranks without features ---------------------------------------------

TEST(TensorParallel, WritesNothingOutsideItsBuffers) {
  for_every_case(100, true, [](const World& w) {
    EXPECT_EQ(w.written_guard(), "")
        << "with " << w.where() << " something was written just outside " << w.written_guard()
        << "; hint: a rank's buffers hold its c = feature_shard(hidden, t, r).size features; "
        << "loops stop before the end (j < size)";
  });
}

TEST(TensorParallel, WorksWithRanksThatOwnNoFeatures) {
  for (const Case c : {Case{5, {2, 3, 3, 2}}, Case{8, {2, 2, 5, 3}}}) {
    World w(c.t, c.d, 110);
    w.forward();
    w.backward();
    for (int r = 0; r < c.t; ++r) {
      ASSERT_FALSE(first_mismatch(w.y(r), w.expected_y()).has_value())
          << "with " << w.where() << " rank " << r << "'s y differs; hint: a rank with no "
          << "features computes partial sums of zero and still takes part in g and f";
      ASSERT_FALSE(first_mismatch(w.dx(r), w.expected_dx()).has_value())
          << "with " << w.where() << " rank " << r << "'s dx differs; hint: a rank with no "
          << "features still takes part in f";
    }
    EXPECT_EQ(w.written_guard(), "") << "with " << w.where() << ", a write outside "
                                     << w.written_guard();
  }
}

// --- 1 to 5 ranks, the whole pair ---------------------------------------------------------

class TensorParallelOnTRanks : public ::testing::TestWithParam<int> {};

// Both passes: every rank's y and dx are the unsplit pair's, and the ranks' shards of dW1
// put together (gather_columns) are the unsplit dW1.
TEST_P(TensorParallelOnTRanks, BothPassesEqualTheUnsplitPair) {
  const int t = GetParam();
  World w(t, Dims{4, 6, 11, 5}, 120 + static_cast<std::uint64_t>(t));
  w.forward();
  w.backward();
  for (int r = 0; r < t; ++r) {
    ASSERT_FALSE(first_mismatch(w.y(r), w.expected_y()).has_value())
        << "with " << w.where() << " rank " << r << "'s y; hint: " << diagnose_y(w, w.y(r));
    ASSERT_FALSE(first_mismatch(w.dx(r), w.expected_dx()).has_value())
        << "with " << w.where() << " rank " << r << "'s dx; hint: f sums the ranks' dh_r W1_r^T";
  }
  std::vector<Matrix> shards;
  for (int r = 0; r < t; ++r) shards.push_back(w.dw1(r));
  std::vector<const float*> pointers;
  for (const Matrix& s : shards) pointers.push_back(s.data());
  Matrix whole(static_cast<std::size_t>(w.dims().inputs) * w.dims().hidden);
  gather_columns(pointers, w.dims().inputs, w.dims().hidden, whole.data());
  const auto bad = first_mismatch(whole, w.dw1_whole());
  EXPECT_FALSE(bad.has_value()) << "with " << w.where() << " the ranks' dw1 put together: "
                                << describe_mismatch(whole, w.dw1_whole(), *bad)
                                << "; hint: each rank's dw1 holds its columns of dW1";
}

INSTANTIATE_TEST_SUITE_P(Ranks, TensorParallelOnTRanks, ::testing::Values(1, 2, 3, 4, 5),
                         [](const auto& info) { return "T" + std::to_string(info.param); });

}  // namespace
}  // namespace towers::exercises

// SPDX-License-Identifier: MIT
// Chapter 10's claims, run as a learner runs the program (host backend, t and N in 1, 2, 4):
// the bytes on the wire per step equal the closed forms exactly, collective by collective;
// at N = 2 the hybrid moves fewer bytes than data parallelism up to b = 192 and more from
// 193 on; every device's parameters, gradients and moving averages are its slice, to the
// byte, and its activations the Network's plus the split layers' (the hybrid's gathered
// pool2 among them); one rank (or one tower) is chapter 4's single tower bit for bit, and
// more ranks stay within the bound derived from the cut; with a slow link g and f are
// exposed for their whole link time, the compute stream waiting on them. (The bits against
// an order-matched reference, the column split's logits and the cut's own bound are
// chapter10_split_test.cpp's.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "model/network.hpp"
#include "model/parameters.hpp"
#include "network_activations.hpp"
#include "parallel/tensor_bytes.hpp"
#include "parallel/tensor_slices.hpp"
#include "parallel/tensor_split.hpp"
#include "chapter10_helpers.hpp"
#include "program.hpp"
#include "runtime/link_model.hpp"
#include "runtime/runtime.hpp"

namespace towers {
namespace {

using testing::run;
using testing::saved_params;

using chapter10_tests::gamma;
using chapter10_tests::kBatch;
using chapter10_tests::same_bits;
const std::string kSmall = "--backend host --batch-size 8 --log-every 1 ";

std::filesystem::path temp_file(const std::string& name) {
  return testing::temp_file("towers-ch10", name);
}


long long key(const testing::ProgramRun& r, const std::string& name) {
  return std::llround(r.number(name));
}

// The floats of local3 and local4 that are split: local3's weights and biases, local4's
// weights (its biases are added once, after the sum, and stay whole). From the model.
std::int64_t split_floats() {
  return static_cast<std::int64_t>(model::parameter("local3/weights").count +
                                   model::parameter("local3/biases").count +
                                   model::parameter("local4/weights").count);
}

TEST(TensorClosedForms, AreTheModelsNumbers) {
  // The replicated parameters: every one but the split ones.
  EXPECT_EQ(split_floats(), 958848);
  EXPECT_EQ(kReplicatedParameters,
            static_cast<std::int64_t>(model::kNumParameters) - split_floats());
  EXPECT_EQ(static_cast<std::int64_t>(TensorSliceLayout::replicated_floats()), kReplicatedParameters);
  EXPECT_EQ(kModelParameters, static_cast<std::int64_t>(model::kNumParameters));
  EXPECT_EQ(kTensorInputWidth, model::Network::layer_output_floats(model::kPool2));
  EXPECT_EQ(kTensorOutputWidth, model::Network::layer_output_floats(model::kLocal4));
  // The forms as the issue writes them, per device, times the devices.
  for (int n : {1, 2, 4}) {
    for (int b : {1, 8, 192}) {
      EXPECT_EQ(tensor_wire_floats(n, b), n * (2 * (n - 1) * b * (192 + 2304) / n));
      EXPECT_EQ(hybrid_wire_floats(n, b), n * (2 * (n - 1) * b * 2496) + 2 * (n - 1) * 109450);
    }
    EXPECT_EQ(data_parallel_wire_floats(n), 2 * (n - 1) * 1068298);
  }
}

// Why this model is the one weird trick's case: local3 and local4 hold 90 % of the
// parameters (958,848 split floats and local4's 192 biases of 1,068,298: 89.8 %), the
// convolutions 94 % of a training step's multiply-adds (94.5 %) and 10 % of the parameters.
TEST(TensorClosedForms, TheFcPairHoldsTheParametersTheConvolutionsTheCompute) {
  const double fc = static_cast<double>(split_floats() + model::parameter("local4/biases").count);
  EXPECT_NEAR(fc / static_cast<double>(model::kNumParameters), 0.898, 0.0005);
  const auto conv = [](const char* weights, int rows, int products) {
    const model::ParameterView& view = model::parameter(weights);
    return static_cast<double>(rows) * static_cast<double>(view.count) * products;
  };
  // conv1: forward and weight gradient (no gradient for the images); conv2: all three.
  const double convolutions = conv("conv1/weights", 24 * 24, 2) + conv("conv2/weights", 12 * 12, 3);
  EXPECT_NEAR(convolutions / model::Network::multiply_adds_per_image(), 0.945, 0.0005);
  const double conv_parameters = static_cast<double>(
      TensorSliceLayout::conv_floats());
  EXPECT_NEAR(conv_parameters / static_cast<double>(model::kNumParameters), 0.100, 0.0005);
}

// The crossover, an integer comparison: per device at N = 2, the hybrid's
// 2 b 2,496 + 109,450 floats against data parallelism's 1,068,298.
TEST(TensorClosedForms, HybridMovesFewerBytesThanDataParallelUpToBatch192) {
  constexpr int n = 2;
  EXPECT_EQ(hybrid_wire_floats(n, 192) / n, 1067914);
  EXPECT_EQ(hybrid_wire_floats(n, 193) / n, 1072906);
  EXPECT_EQ(data_parallel_wire_floats(n) / n, 1068298);
  EXPECT_LT(hybrid_wire_floats(n, 192), data_parallel_wire_floats(n));
  EXPECT_GT(hybrid_wire_floats(n, 193), data_parallel_wire_floats(n));
  // And it is the first crossing: the form grows with b.
  for (int b = 1; b <= 192; ++b) EXPECT_LT(hybrid_wire_floats(n, b), data_parallel_wire_floats(n)) << b;
}

// In general the hybrid moves fewer bytes exactly while N b <= 384: per device it sends
// 2(N-1) b 2,496 activation floats plus the replicated all-reduce, against data
// parallelism's all-reduce of the split 958,848 = 384 x 2,497 as well; the difference is
// 2(N-1)/N (N b 2,496 - 384 x 2,497), below zero while N b <= 384 (local3's width).
TEST(TensorClosedForms, HybridPaysWhileTheGlobalBatchIsAtMostLocal3sWidth) {
  for (int n : {2, 3, 4, 8}) {
    for (int b = 1; b <= 400; ++b) {
      EXPECT_EQ(hybrid_wire_floats(n, b) < data_parallel_wire_floats(n), n * b <= 384)
          << "N = " << n << ", b = " << b;
    }
  }
}

// The bytes of the Network a rank's tower holds for batch b, with its images and labels:
// what chapter 4's tower holds too (the ledger counts them as activations).
long long network_activation_bytes(int b) {
  return testing::allocated_network_activation_bytes(b) + 4LL * b * 24 * 24 * 3 + 4LL * b;
}

struct Split {
  bool hybrid;
  int n;
};
void PrintTo(const Split& s, std::ostream* out) { *out << (s.hybrid ? "hybrid" : "tp") << s.n; }

class TensorRun : public ::testing::TestWithParam<Split> {};
INSTANTIATE_TEST_SUITE_P(Splits, TensorRun,
                         ::testing::Values(Split{false, 1}, Split{false, 2}, Split{false, 4},
                                           Split{true, 1}, Split{true, 2}, Split{true, 4}),
                         [](const auto& info) {
                           return std::string(info.param.hybrid ? "hybrid" : "tp") +
                                  std::to_string(info.param.n);
                         });

// Two steps: the counter counts every copy between two devices; the forms are per step.
TEST_P(TensorRun, BytesOnTheWireAndMemoryPerDeviceEqualTheClosedForms) {
  const auto [hybrid, n] = GetParam();
  constexpr int kSteps = 2;
  auto r = run("10_tensor", kSmall + "--steps 2 --devices " + std::to_string(n) +
                                (hybrid ? " --hybrid" : ""));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.last("collectives"), "ring") << r.output;
  const std::int64_t b = kBatch, others = n - 1;
  // Tensor parallel: n ranks, one batch; the hybrid: n towers of b. Each device a tower.
  EXPECT_EQ(r.last("towers"), std::to_string(n)) << r.output;
  EXPECT_EQ(r.last("mode"), hybrid ? "hybrid" : "tp") << r.output;
  // Bytes: every collective, then all of them, against the form, exactly.
  if (!hybrid) {
    EXPECT_EQ(key(r, "wire_g_bytes_per_step"), 4 * 2 * others * b * 192) << r.output;
    EXPECT_EQ(key(r, "wire_f_bytes_per_step"), 4 * 2 * others * b * 2304) << r.output;
  } else {
    EXPECT_EQ(key(r, "wire_gather_pool2_bytes_per_step"), 4 * others * n * b * 2304) << r.output;
    EXPECT_EQ(key(r, "wire_scatter_local4_bytes_per_step"), 4 * others * n * b * 192) << r.output;
    EXPECT_EQ(key(r, "wire_gather_local4_gradient_bytes_per_step"), 4 * others * n * b * 192);
    EXPECT_EQ(key(r, "wire_scatter_pool2_gradient_bytes_per_step"), 4 * others * n * b * 2304);
    EXPECT_EQ(key(r, "wire_replicated_bytes_per_step"), 4 * 2 * others * 109450) << r.output;
  }
  const std::int64_t form = 4 * (hybrid ? hybrid_wire_floats(n, kBatch) : tensor_wire_floats(n, kBatch));
  EXPECT_EQ(key(r, "wire_bytes"), kSteps * form) << r.output;
  EXPECT_EQ(key(r, "formula_wire_bytes_per_step"), form) << r.output;
  EXPECT_EQ(key(r, "data_parallel_wire_bytes_per_step"), 4 * data_parallel_wire_floats(n));

  // Memory: each device holds one rank's slice of each kind of model state. The split
  // part is 1/n of chapter 4's local3 and local4 (n divides 384), to the byte.
  const long long slice = 4 * (kReplicatedParameters + split_floats() / n);
  EXPECT_EQ((slice - 4 * kReplicatedParameters) * n, 4 * split_floats());
  for (const char* category : {"parameters", "gradients", "optimizer_state"}) {
    EXPECT_EQ(key(r, std::string("peak_") + category + "_bytes"), slice) << category << "\n"
                                                                       << r.output;
  }
  // Activations: the Network's for b images, as chapter 4's tower, plus the split layers':
  // h and dh over the rows they see, a ones vector, two scalars; the hybrid's rows are all
  // N b images, and it holds pool2's gathered outputs and their gradient [N b, 2304] and
  // local4's rows and their gradient [N b, 192]: the price of the trick.
  const std::int64_t rows = hybrid ? n * b : b, columns = 384 / n;
  std::int64_t split_activations = 2 * rows * columns + rows + 2;
  if (hybrid) split_activations += 2 * rows * 2304 + 2 * rows * 192;
  EXPECT_EQ(static_cast<std::int64_t>(TensorSplit::activation_floats(
                hybrid ? TensorMode::kHybrid : TensorMode::kTensorParallel, n, kBatch,
                static_cast<std::size_t>(columns))),
            split_activations);
  EXPECT_EQ(key(r, "peak_activations_bytes"), network_activation_bytes(kBatch) + 4 * split_activations)
      << r.output;
}

// --- Bits --------------------------------------------------------------------------------

// One rank holds all the columns and rows: the same ops on the same values as chapter 4's
// one tower (its products are Network's, its sums uncut). One hybrid tower too.
TEST(TensorBits, OneRankAndOneTowerAreChapter4sSingleTowerBitForBit) {
  const auto ch4 = temp_file("ch4-1"), tp = temp_file("tp1"), hy = temp_file("hybrid1");
  const std::string args = kSmall + "--steps 3 --devices 1 --save-params ";
  auto a = run("04_nccl_iterator", args + ch4.string());
  auto b = run("10_tensor", args + tp.string());
  auto c = run("10_tensor", args + hy.string() + " --hybrid");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_TRUE(same_bits(saved_params(ch4), saved_params(tp)));
  EXPECT_TRUE(same_bits(saved_params(ch4), saved_params(hy)));
  EXPECT_EQ(a.last("final_loss"), b.last("final_loss"));
}

// The bound the chapter's page states. The row split changes the order in which each of
// local4's 384-term sums (forward) and of pool2's gradient's (backward, f) is added:
// chapter 4's gemm adds the 384 products one way; t ranks add 384/t each, and the ring
// adds the t parts. Any order of adding m floats errs by at most gamma(m-1) times the sum
// of their magnitudes (gamma(k) = k u / (1 - k u), u = 2^-24: Higham, Accuracy and
// Stability of Numerical Algorithms, 4.2); so the two sums differ by at most
//   eps_t = gamma(383) + gamma(384/t + t - 2)
// of their magnitudes (chapter10_split_test.cpp holds the sums themselves to it). The rest
// of the step runs the same ops in the same order on values that close; to first order,
// with no ReLU or max-pool choice flipped, each parameter's update changes by at most
// eps_t of the largest update, and the new parameter by one more rounding, half an ulp
// each run:
//   |p_tp - p_ch4| <= eps_t * max|update| + ulp(p)
// for one step from the same state. Measured here: about 4e-7 of the largest update, the
// bound 3.4e-5 (t = 2) and 2.9e-5 (t = 4).

double ulp(float x) {
  const float a = std::fabs(x);
  return static_cast<double>(std::nextafter(a, INFINITY) - a);
}

TEST(TensorBits, RanksStayWithinTheCutsBoundOfChapter4) {
  const auto start = temp_file("start"), ch4 = temp_file("ch4-step");
  ASSERT_EQ(run("04_nccl_iterator", kSmall + "--steps 0 --devices 1 --save-params " +
                                        start.string()).exit_code, 0);
  auto a = run("04_nccl_iterator", kSmall + "--steps 1 --devices 1 --save-params " + ch4.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const auto p0 = saved_params(start), p4 = saved_params(ch4);
  const double largest_update = testing::largest_difference(p0, p4);
  ASSERT_GT(largest_update, 0.0);
  for (int t : {2, 4}) {
    const auto tp = temp_file("tp-step-" + std::to_string(t));
    auto r = run("10_tensor", kSmall + "--steps 1 --devices " + std::to_string(t) +
                                  " --save-params " + tp.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto pt = saved_params(tp);
    ASSERT_EQ(pt.size(), p4.size());
    const double eps = gamma(383) + gamma(384.0 / t + t - 2);
    std::size_t differing = 0, beyond = 0;
    double worst = 0;
    for (std::size_t i = 0; i < pt.size(); ++i) {
      const double difference = std::fabs(double(pt[i]) - p4[i]);
      differing += difference > 0;
      worst = std::max(worst, difference);
      beyond += !(difference <= eps * largest_update + std::max(ulp(pt[i]), ulp(p4[i])));
    }
    std::printf("t = %d: %zu of %zu parameters differ from chapter 4's; the largest by %.3g, "
                "%.3g of the largest update (bound %.3g)\n",
                t, differing, pt.size(), worst, worst / largest_update, eps);
    EXPECT_GT(differing, 0u) << "the sums are cut: some rounding must differ";
    EXPECT_EQ(beyond, 0u) << "t = " << t;
  }
}

// The hybrid against chapter 4 on as many towers, from the same state and batches: it cuts
// local4's sums as tensor parallelism does (over N towers), and it adds the FC layers'
// weight gradients over all N b images in one product where chapter 4 adds b per tower and
// the ring then adds the N towers' means; both are orders of one sum. To first order, as
// above, every parameter stays within
//   (gamma(383) + gamma(384/N + N - 2) + gamma(N b - 1) + gamma(b + N - 2)) max|update| + ulp.
TEST(TensorBits, HybridTowersStayWithinTheBoundOfChapter4) {
  const auto start = temp_file("start-hybrid");
  ASSERT_EQ(run("04_nccl_iterator", kSmall + "--steps 0 --devices 1 --save-params " +
                                        start.string()).exit_code, 0);
  const auto p0 = saved_params(start);
  for (int n : {2, 4}) {
    const auto ch4 = temp_file("ch4-hybrid-" + std::to_string(n));
    const auto hy = temp_file("hybrid-step-" + std::to_string(n));
    const std::string args = kSmall + "--steps 1 --devices " + std::to_string(n) + " --save-params ";
    auto a = run("04_nccl_iterator", args + ch4.string());
    auto b = run("10_tensor", args + hy.string() + " --hybrid");
    ASSERT_EQ(a.exit_code, 0) << a.output;
    ASSERT_EQ(b.exit_code, 0) << b.output;
    EXPECT_EQ(a.last("towers"), b.last("towers"));
    const auto p4 = saved_params(ch4), ph = saved_params(hy);
    const double largest_update = testing::largest_difference(p0, p4);
    const double eps = gamma(383) + gamma(384.0 / n + n - 2) + gamma(n * kBatch - 1.0) +
                       gamma(kBatch + n - 2.0);
    std::size_t beyond = 0;
    for (std::size_t i = 0; i < ph.size(); ++i) {
      const double difference = std::fabs(double(ph[i]) - p4[i]);
      beyond += !(difference <= eps * largest_update + std::max(ulp(ph[i]), ulp(p4[i])));
    }
    std::printf("hybrid, N = %d: largest difference from chapter 4 %.3g of the largest update "
                "(bound %.3g)\n", n, testing::largest_difference(p4, ph) / largest_update, eps);
    EXPECT_EQ(beyond, 0u) << "N = " << n;
  }
}

// --- The critical path -------------------------------------------------------------------

// The link model (runtime/link_model.hpp): a peer copy of `bytes` takes latency + 8 bytes
// / rate. A ring all-reduce of `count` floats over t ranks makes 2(t-1) copies on every
// rank, each of one chunk (count / t floats here): that is g's and f's time per step on a
// rank, all of it on the rank's only stream, so all of it exposed.
double link_ms(const LinkModel& link, int t, std::int64_t count) {
  return 2.0 * (t - 1) * link.seconds(static_cast<std::size_t>(4 * count / t)) * 1000.0;
}

struct Span {
  std::string name;
  int device = 0;
  int step = 0;
  double start = 0, end = 0;
};

// The op spans of a Chrome trace written by --trace, with their step.
std::vector<Span> read_trace(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<Span> spans;
  const std::regex op(
      R"re("ph":"X","cat":"[^"]*","name":"([^"]*)","pid":(\d+),"tid":(\d+),"ts":([0-9.e+-]+),"dur":([0-9.e+-]+).*"step":(\d+))re");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, op)) continue;
    const double start = std::stod(m[4]);
    spans.push_back({m[1], std::stoi(m[2]), std::stoi(m[6]), start, start + std::stod(m[5])});
  }
  return spans;
}

// With a link of 50 ms a copy, g's and f's exposed time per step and rank is their link
// time: at least (a copy's sleep ends no earlier than the model says) and within chapter
// 6's 10 % (runtime/link_test.cpp's bound on a sleep's lateness), in the best of three runs
// (a loaded machine wakes a sleeping stream late). Nothing computes beside them on the
// rank (overlap 0): the stream that computes is the one that waits.
TEST(TensorCriticalPath, GAndFAreExposedForTheirWholeLinkTime) {
  const LinkModel link{1.0, 50000.0};
  const int t = 2;
  const double g_ms = link_ms(link, t, kBatch * 192), f_ms = link_ms(link, t, kBatch * 2304);
  // The link sleeps for its model's time, and a wake-up on a loaded machine comes late
  // (a hunt under load saw f at 4.6 times its link time once): each of g and f is read at
  // its least over up to three runs, and must come within 25 % of the model there.
  double best_g = 1e300, best_f = 1e300;
  const auto within = [&] { return best_g <= 1.25 * g_ms && best_f <= 1.25 * f_ms; };
  std::string outputs;
  for (int attempt = 0; attempt < 3 && !within(); ++attempt) {
    const auto trace = temp_file("link-" + std::to_string(attempt) + ".json");
    auto r = run("10_tensor", kSmall + "--steps 3 --devices 2 --link-gbps 1 "
                                       "--link-latency-us 50000 --trace " + trace.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    outputs += r.output;
    // The program's own link model agrees with this derivation.
    EXPECT_NEAR(r.number("link_model_g_ms"), g_ms, 1e-3) << r.output;
    EXPECT_NEAR(r.number("link_model_f_ms"), f_ms, 1e-3) << r.output;
    // Every run: no less than the link time, and nothing of the rank beside it.
    EXPECT_GE(r.number("exposed_g_ms"), g_ms) << r.output;
    EXPECT_GE(r.number("exposed_f_ms"), f_ms) << r.output;
    EXPECT_EQ(r.last("g_overlap"), "0.000") << r.output;
    EXPECT_EQ(r.last("f_overlap"), "0.000") << r.output;
    // The trace: on each rank, local4's bias (the first op after the sum) starts only
    // after the last op of g has ended, at least g's link time after the partial
    // product: the compute stream waited for the link.
    const auto spans = read_trace(trace);
    int checked = 0;
    for (int device = 0; device < t; ++device) {
      for (int step = 1; step < 3; ++step) {
        double partial_end = -1, g_end = -1, bias_start = -1;
        for (const Span& s : spans) {
          if (s.device != device || s.step != step) continue;
          if (s.name == "local4 gemm") partial_end = s.end;
          if (s.name.rfind("g ring ", 0) == 0) g_end = std::max(g_end, s.end);
          if (s.name == "local4 bias_add" && bias_start < 0) bias_start = s.start;
        }
        ASSERT_GT(partial_end, 0) << "no local4 gemm on device " << device << ", step " << step;
        ASSERT_GT(g_end, 0);
        ASSERT_GT(bias_start, 0);
        EXPECT_GE(bias_start, g_end);
        EXPECT_GE(bias_start - partial_end, g_ms * 1000.0);
        ++checked;
      }
    }
    EXPECT_EQ(checked, 2 * t);
    best_g = std::min(best_g, r.number("exposed_g_ms"));
    best_f = std::min(best_f, r.number("exposed_f_ms"));
  }
  EXPECT_TRUE(within()) << "g's or f's exposed time was more than 25 % above the link model's ("
                        << g_ms << " and " << f_ms << " ms) in each of three runs: least "
                        << best_g << " and " << best_f << " ms\n" << outputs;
}

// --- Mistakes a user can make ------------------------------------------------------------

TEST(TensorFlags, ImpossibleSplitsAreRefusedBeforeTheRun) {
  for (const std::string flags : {"--tp 2 --hybrid", "--tp 0", "--tp 385", "--tp 2 --towers 2",
                                  "--collectives nccl", "--collectives mpi"}) {
    auto r = run("10_tensor", kSmall + "--steps 1 --devices 2 " + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.output;
    EXPECT_TRUE(r.summaries.empty()) << flags;
  }
}

}  // namespace
}  // namespace towers

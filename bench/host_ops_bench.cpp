// SPDX-License-Identifier: MIT
// bench_host_ops: the host loops of kernels/host timed against the plain per-element loop
// over the kernels/math function (what a CUDA thread computes, one index at a time), with
// the number of elements that differ in any bit next to the speed.
//
//   build/bin/bench_host_ops                    # the model's shapes at batch 128
//   build/bin/bench_host_ops --batch-size 32 --repeats 20
//
// Where a host loop computes an op in a CPU-friendly order (kernels/host/lrn.cpp), its
// claim is that every output is bit for bit the per-element function's; #wrong counts the
// outputs for which that fails (it must be 0). Times are best and median of `repeats`
// runs on one thread; speedup = reference median / host median.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/timing.hpp"
#include "cli/options.hpp"
#include "cli/summary.hpp"
#include "model/network.hpp"  // kMaxBatchSize
#include "kernels/host/kernels.hpp"
#include "kernels/math/elementwise.hpp"
#include "kernels/math/lrn.hpp"

namespace towers {
namespace {

struct Timing {
  double best_ms = 0, median_ms = 0;
};

Timing time_runs(const std::function<void()>& run, int repeats) {
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto start = base::Clock::now();
    run();
    ms.push_back(base::ms_since(start));
  }
  return Timing{base::best(ms), base::median(ms)};
}

// Elements of `a` and `b` that differ in any bit.
long long count_wrong(const std::vector<float>& a, const std::vector<float>& b) {
  long long wrong = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    wrong += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  }
  return wrong;
}

std::vector<float> random_floats(std::size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// One row: runs both loops into their own outputs, compares, times.
struct Case {
  std::string name;
  int elements;
  std::function<void()> reference, host;
  std::vector<std::vector<float>*> reference_out, host_out;
};

long long run_case(const Case& c, int repeats) {
  c.reference();
  c.host();
  long long wrong = 0;
  for (std::size_t k = 0; k < c.reference_out.size(); ++k) {
    wrong += count_wrong(*c.reference_out[k], *c.host_out[k]);
  }
  const Timing ref = time_runs(c.reference, repeats);
  const Timing host = time_runs(c.host, repeats);
  std::printf("  %-14s  %10d  %9.3f  %9.3f  %9.3f  %9.3f  %7.2f  %7lld\n", c.name.c_str(),
              c.elements, ref.best_ms, ref.median_ms, host.best_ms, host.median_ms,
              ref.median_ms / host.median_ms, wrong);
  Summary()
      .add("op", c.name)
      .add("elements", c.elements)
      .add("reference_ms", ref.median_ms, 3)
      .add("host_ms", host.median_ms, 3)
      .add("speedup", ref.median_ms / host.median_ms, 2)
      .add("wrong", wrong)
      .print();
  return wrong;
}

int run(int batch_size, int channels, int repeats) {
  // norm1/norm2: [B * 12 * 12, C]; inputs like the model's (post-ReLU, O(1)). C comes from
  // the command line, as it does for the kernels: a constant would let the compiler turn
  // the reference's i % C into cheaper arithmetic than the host loops ever see.
  const int pixels = batch_size * 12 * 12, n = pixels * channels;
  const math::LrnParams p;
  const std::vector<float> x = random_floats(n, 0.0f, 3.0f, 1);
  const std::vector<float> dy = random_floats(n, -1.0f, 1.0f, 2);
  std::vector<float> y_ref(n), scale_ref(n), y(n), scale(n), dx_ref(n), dx(n);
  host::lrn_forward(pixels, channels, p, x.data(), y.data(), scale.data());  // backward's inputs
  std::vector<float> fy = y, fscale = scale;

  std::vector<Case> cases;
  cases.push_back({"lrn_forward", n,
                   [&] {
                     for (int i = 0; i < n; ++i) {
                       const math::LrnForward o = math::lrn_forward(i, x.data(), channels, p);
                       y_ref[i] = o.y;
                       scale_ref[i] = o.scale;
                     }
                   },
                   [&] { host::lrn_forward(pixels, channels, p, x.data(), y.data(), scale.data()); },
                   {&y_ref, &scale_ref},
                   {&y, &scale}});
  cases.push_back({"lrn_backward", n,
                   [&] {
                     for (int i = 0; i < n; ++i) {
                       dx_ref[i] = math::lrn_backward(i, x.data(), fy.data(), fscale.data(),
                                                      dy.data(), channels, p);
                     }
                   },
                   [&] {
                     host::lrn_backward(pixels, channels, p, x.data(), fy.data(), fscale.data(),
                                        dy.data(), dx.data());
                   },
                   {&dx_ref},
                   {&dx}});
  // conv1's bias + ReLU: [B * 24 * 24, C] (bias_add works in place: fresh copies each run).
  const int rows1 = batch_size * 24 * 24, n1 = rows1 * channels;
  const std::vector<float> pre = random_floats(n1, -1.0f, 1.0f, 3);
  const std::vector<float> bias = random_floats(channels, -0.1f, 0.1f, 4);
  std::vector<float> b_ref(n1), b_host(n1);
  cases.push_back({"bias_add", n1,
                   [&] {
                     std::copy(pre.begin(), pre.end(), b_ref.begin());
                     for (int i = 0; i < n1; ++i) b_ref[i] = math::bias_add(i, b_ref.data(), bias.data(), channels);
                   },
                   [&] {
                     std::copy(pre.begin(), pre.end(), b_host.begin());
                     host::bias_add(rows1, channels, bias.data(), b_host.data());
                   },
                   {&b_ref},
                   {&b_host}});

  // conv1's ReLU gradient, in place as the backward pass runs it; about half the
  // forward outputs are zero, so a branch per element is a coin flip.
  const std::vector<float> relu_y = random_floats(n1, -1.0f, 1.0f, 5);
  std::vector<float> r_ref(n1), r_host(n1);
  for (std::size_t i = 0; i < relu_y.size(); ++i) r_ref[i] = relu_y[i] > 0 ? relu_y[i] : 0.0f;
  const std::vector<float> relu_out = r_ref, relu_dy = random_floats(n1, -1.0f, 1.0f, 6);
  cases.push_back({"relu_backward", n1,
                   [&] {
                     std::copy(relu_dy.begin(), relu_dy.end(), r_ref.begin());
                     for (int i = 0; i < n1; ++i) {
                       r_ref[i] = math::relu_backward(i, relu_out.data(), r_ref.data());
                     }
                   },
                   [&] {
                     std::copy(relu_dy.begin(), relu_dy.end(), r_host.begin());
                     host::relu_backward(n1, relu_out.data(), r_host.data(), r_host.data());
                   },
                   {&r_ref},
                   {&r_host}});

  std::printf("# bench_host_ops: per-element math:: loop (reference) vs kernels/host loop, one "
              "thread, batch %d, %d runs each\n",
              batch_size, repeats);
  std::printf("# %-14s  %10s  %9s  %9s  %9s  %9s  %7s  %7s\n", "op", "elements", "ref best",
              "ref med", "host best", "host med", "speedup", "#wrong");
  std::printf("# %-14s  %10s  %9s  %9s  %9s  %9s  %7s  %7s\n", "", "", "(ms)", "(ms)", "(ms)",
              "(ms)", "", "");
  long long wrong = 0;
  for (const Case& c : cases) wrong += run_case(c, repeats);
  if (wrong > 0) {
    std::fprintf(stderr, "error: %lld outputs differ from the per-element math functions\n", wrong);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace towers

int main(int argc, char** argv) {
  CLI::App app{"Host loops of kernels/host vs the per-element math:: loop: time and #wrong bits"};
  int batch_size = 128, channels = 64, repeats = 10;
  // Every number is checked as it is parsed: CLI11 reads an empty value as 0.
  app.add_option("--batch-size", batch_size, "the model's shapes at this batch")
      ->capture_default_str()->check(towers::whole_number(1, towers::model::kMaxBatchSize));
  app.add_option("--channels", channels, "channels of every tensor (the model's: 64)")
      ->capture_default_str()->check(towers::whole_number(1, 1024));
  app.add_option("--repeats", repeats, "runs per loop; best and median reported")
      ->capture_default_str()->check(towers::whole_number(1, 10000));
  return towers::run_program(app, argc, argv, [&] { return towers::run(batch_size, channels, repeats); });
}

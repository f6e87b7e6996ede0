// SPDX-License-Identifier: MIT
// bench_allreduce: towers' all-reduce timed the way nccl-tests' all_reduce_perf times
// NCCL: one row per size, with the correctness of that size next to its speed.
//
//   build/bin/bench_allreduce --backend host --devices 2   # then --devices 4 and 8
//   build/bin/bench_allreduce --backend cuda               # NCCL and the ring, every GPU
//   build/bin/bench_allreduce --backend cuda --towers 2    # two towers on one GPU: ring only
//
// Each row averages a buffer of `size` bytes per tower: warmup averages, then `iters`
// averages enqueued back to back and timed on the host clock from the first enqueue to
// the last stream's completion (so enqueue overhead counts, as it does in training). Then
// fresh inputs are averaged once and checked element by element against the tests' exact
// mean (tests/allreduce/tower_buffers.hpp: the same inputs and oracle): #wrong.
//
// Bandwidths, as nccl-tests defines them:
//   algbw = size / time: how fast one tower's buffer gets averaged.
//   busbw = algbw * 2(n-1)/n. In a ring each tower sends every chunk it does not own once
//     in the reduce-scatter and once in the all-gather: 2(n-1) chunks of size/n, so each
//     link carries 2(n-1)/n * size bytes per average. busbw is that traffic over the time,
//     the speed each link actually ran at, comparable across n and with the link's (here:
//     memory's) bandwidth. It is the same formula for NCCL, whatever algorithm it picks.
//
// The host backend's links are memcpy and axpy on one core each, so the benchmark also
// measures single-thread memcpy bandwidth and reports busbw(4 MB) / memcpy.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/timing.hpp"
#include "cli/options.hpp"
#include "cli/summary.hpp"
#include "parallel/allreduce.hpp"
#include "tower_buffers.hpp"

namespace towers {
namespace {

constexpr std::size_t kMinBytes = std::size_t{4} << 10;
constexpr std::size_t kMaxBytes = std::size_t{64} << 20;
constexpr std::size_t kReportBytes = std::size_t{4} << 20;  // the row compared with memcpy
constexpr int kMemcpyRepeats = 10;

struct BenchOptions {
  int iters = 20;
  int warmup = 5;
  int towers = 0;  // 0: one tower per device
};

using base::seconds_since;
using testing::TowerBuffers;

// One host thread copying kMaxBytes, best of kMemcpyRepeats, in GB/s of bytes copied.
double memcpy_gbs() {
  std::vector<char> src(kMaxBytes, 1), dst(kMaxBytes, 0);  // touched: no page faults timed
  double best = 1e30;
  for (int i = 0; i < kMemcpyRepeats; ++i) {
    src[static_cast<std::size_t>(i)] = static_cast<char>(i);  // the copy cannot be skipped
    const auto start = base::Clock::now();
    std::memcpy(dst.data(), src.data(), kMaxBytes);
    best = std::min(best, seconds_since(start));
    if (dst[static_cast<std::size_t>(i)] != static_cast<char>(i)) std::abort();
  }
  return static_cast<double>(kMaxBytes) / best / 1e9;
}

struct RowResult {
  double busbw_gbs = 0;
  long long wrong = 0;
};

RowResult run_row(AllReduce& allreduce, TowerBuffers& towers, std::size_t bytes,
                  const BenchOptions& options) {
  const std::size_t count = bytes / sizeof(float);
  const int n = towers.towers();
  towers.upload(0, count);
  for (int i = 0; i < options.warmup; ++i) {
    allreduce.average(towers.buffers(), count, towers.streams());
  }
  towers.synchronize();
  const auto start = base::Clock::now();
  for (int i = 0; i < options.iters; ++i) {
    allreduce.average(towers.buffers(), count, towers.streams());
  }
  towers.synchronize();
  const double seconds = seconds_since(start) / options.iters;

  // Exact for a power-of-two tower count; otherwise 1/n itself is rounded (and NCCL
  // multiplies each input by it before summing), so allow a few ulps of 8.
  const bool power_of_two = (n & (n - 1)) == 0;
  towers.upload(0, count);
  allreduce.average(towers.buffers(), count, towers.streams());
  const long long wrong = towers.count_wrong(count, power_of_two ? 0.0f : 1e-5f);

  const double algbw = static_cast<double>(bytes) / seconds / 1e9;
  const double busbw = algbw * 2.0 * (n - 1) / n;
  std::printf("%12zu  %12zu  %10.1f  %10.2f  %10.2f  %7lld\n", bytes, count, seconds * 1e6,
              algbw, busbw, wrong);
  return RowResult{busbw, wrong};
}

// Runs every size for one algorithm and prints its table and summary line; returns the
// number of wrong elements.
long long run_algorithm(AllReduce& allreduce, Runtime& runtime, TowerBuffers& towers,
                        const BenchOptions& options, double memcpy) {
  std::printf("#\n# algorithm: %s, %d towers on %d %s device(s), iters %d, warmup %d\n",
              std::string(allreduce.name()).c_str(), towers.towers(), runtime.device_count(),
              std::string(to_string(runtime.backend())).c_str(), options.iters, options.warmup);
  std::printf("# %10s  %12s  %10s  %10s  %10s  %7s\n", "size(B)", "count(elts)", "time(us)",
              "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  RowResult report;
  long long wrong = 0;
  for (std::size_t bytes = kMinBytes; bytes <= kMaxBytes; bytes *= 4) {
    const RowResult row = run_row(allreduce, towers, bytes, options);
    wrong += row.wrong;
    if (bytes == kReportBytes) report = row;
  }
  Summary()
      .add("algorithm", std::string(allreduce.name()))
      .add("backend", std::string(to_string(runtime.backend())))
      .add("devices", runtime.device_count())
      .add("towers", towers.towers())
      .add("busbw_4mb_gbs", report.busbw_gbs, 2)
      .add("memcpy_gbs", memcpy, 2)
      .add("ratio", report.busbw_gbs / memcpy, 2)
      .add("wrong", wrong)
      .print();
  return wrong;
}

int run(const RuntimeOptions& runtime_options, const BenchOptions& options) {
  auto runtime = Runtime::create(runtime_options);
  const int towers_count = options.towers > 0 ? options.towers : runtime->device_count();
  std::vector<int> device_of_tower(towers_count);
  for (int t = 0; t < towers_count; ++t) device_of_tower[t] = t % runtime->device_count();

  const double memcpy = memcpy_gbs();
  std::printf("# single-thread memcpy of %zu MB: %.2f GB/s (best of %d)\n", kMaxBytes >> 20,
              memcpy, kMemcpyRepeats);
  TowerBuffers towers(*runtime, device_of_tower, kMaxBytes / sizeof(float));
  long long wrong = 0;
  if (runtime->backend() == Backend::kCuda) {
    try {
      auto nccl = make_nccl_allreduce(*runtime, device_of_tower);
      wrong += run_algorithm(*nccl, *runtime, towers, options, memcpy);
    } catch (const UsageError& e) {
      std::printf("#\n# nccl skipped: %s\n", e.what());  // e.g. towers sharing a GPU
    }
  }
  auto ring = make_ring_allreduce(*runtime, device_of_tower, kMaxBytes / sizeof(float));
  wrong += run_algorithm(*ring, *runtime, towers, options, memcpy);
  if (wrong > 0) {
    std::fprintf(stderr, "error: %lld elements differ from the exact mean\n", wrong);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace towers

int main(int argc, char** argv) {
  CLI::App app{"Times the all-reduce (ring; NCCL on GPUs) from 4 KB to 64 MB, nccl-tests style"};
  towers::RuntimeOptions runtime_options;
  towers::BenchOptions options;
  towers::add_runtime_flags(app, runtime_options);
  // Every number is checked as it is parsed: CLI11 reads an empty value as 0.
  app.add_option("--iters", options.iters, "timed averages per size")
      ->capture_default_str()->check(towers::whole_number(1, 1000000));
  app.add_option("--warmup", options.warmup, "untimed averages per size first")
      ->capture_default_str()->check(towers::whole_number(0, 1000000));
  app.add_option("--towers", options.towers,
                 "towers, placed round-robin on the devices (0: one per device)")
      ->capture_default_str()->check(towers::whole_number(0, 4096));
  return towers::run_program(app, argc, argv, [&] { return towers::run(runtime_options, options); });
}
